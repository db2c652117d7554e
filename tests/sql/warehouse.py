"""A generated warehouse to measure schema linking: 400+ tables in ten subject areas, and 44 questions.

Each subject area has its core tables (written out below: realistic names,
keys, foreign keys, comments on some), and the derived tables real warehouses
are full of (staging copies, history tables, daily snapshots, monthly
aggregates, backups), which hold the same words and compete for the prompt.
Every table is padded with the audit columns warehouses carry, up to
``width`` columns. :data:`QUESTIONS` pairs each question, written as an
analyst would ask it, with the tables it needs.

``sqlite_warehouse(path)`` writes it to a SQLite file; ``ddl(dialect)`` gives
the statements for PostgreSQL or MariaDB.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

# area prefix -> core tables: "name: col type, ...  # comment"; a column ending in _id that names another
# table's key is a foreign key to it; the first column is the primary key.
AREAS: dict[str, list[str]] = {
    "sales": [
        "sales_customers: customer_id int, customer_name text, segment text, country_code text, signup_date date  # One row per customer account",
        "sales_orders: order_id int, customer_id int, store_id int, order_date date, order_status text, channel text, currency_code text, total_amount numeric",
        "sales_order_lines: order_line_id int, order_id int, product_id int, quantity int, unit_price numeric, discount_amount numeric",
        "sales_stores: store_id int, store_name text, region_id int, opened_on date, store_format text",
        "sales_regions: region_id int, region_name text, country_code text",
        "sales_returns: return_id int, order_line_id int, return_date date, return_reason text, refund_amount numeric  # Returned order lines and the refund paid",
        "sales_quotas: quota_id int, sales_rep_id int, quarter text, quota_amount numeric",
        "sales_reps: sales_rep_id int, employee_id int, territory text",
        "sales_promotions: promotion_id int, promotion_name text, starts_on date, ends_on date, discount_pct numeric",
        "sales_order_promotions: order_id int, promotion_id int",
        "sales_price_lists: price_list_id int, product_id int, list_price numeric, valid_from date",
    ],
    "fin": [
        "fin_gl_accounts: gl_account_id int, account_number text, account_name text, account_type text  # General ledger chart of accounts",
        "fin_journal_entries: journal_entry_id int, gl_account_id int, posting_date date, debit_amount numeric, credit_amount numeric, cost_center_id int",
        "fin_cost_centers: cost_center_id int, cost_center_name text, department_id int",
        "fin_invoices: invoice_id int, customer_id int, invoice_date date, due_date date, invoice_status text, amount_due numeric  # Accounts receivable invoices",
        "fin_payments: payment_id int, invoice_id int, paid_on date, payment_method text, amount_paid numeric",
        "fin_refunds: refund_id int, payment_id int, refunded_on date, refund_reason text, refund_amount numeric",
        "fin_budgets: budget_id int, cost_center_id int, fiscal_year int, budget_amount numeric",
        "fin_exchange_rates: rate_id int, currency_code text, rate_date date, usd_rate numeric",
        "fin_vendor_bills: vendor_bill_id int, supplier_id int, bill_date date, bill_amount numeric, bill_status text  # Accounts payable",
        "fin_tax_rates: tax_rate_id int, country_code text, tax_pct numeric",
        "fin_fiscal_periods: fiscal_period_id int, period_name text, starts_on date, ends_on date, is_closed int",
    ],
    "hr": [
        "hr_employees: employee_id int, full_name text, department_id int, job_title_id int, hire_date date, termination_date date, employment_type text",
        "hr_departments: department_id int, department_name text, manager_employee_id int",
        "hr_job_titles: job_title_id int, title text, job_level text",
        "hr_salaries: salary_id int, employee_id int, effective_date date, annual_salary numeric  # Salary history",
        "hr_leave_requests: leave_request_id int, employee_id int, leave_type text, starts_on date, days numeric, approval_status text",
        "hr_performance_reviews: review_id int, employee_id int, review_year int, rating int",
        "hr_trainings: training_id int, course_name text, hours numeric",
        "hr_training_enrollments: enrollment_id int, training_id int, employee_id int, completed_on date",
        "hr_headcount_plans: plan_id int, department_id int, fiscal_year int, planned_headcount int",
        "hr_recruiting_candidates: candidate_id int, job_title_id int, applied_on date, pipeline_stage text, source text",
        "hr_benefit_enrollments: benefit_enrollment_id int, employee_id int, plan_name text, monthly_premium numeric",
    ],
    "mkt": [
        "mkt_campaigns: campaign_id int, campaign_name text, channel text, starts_on date, budget_amount numeric  # Marketing campaigns",
        "mkt_ad_spend: ad_spend_id int, campaign_id int, spend_date date, platform text, spend_amount numeric, impressions int, clicks int",
        "mkt_leads: lead_id int, campaign_id int, created_on date, lead_source text, lead_status text",
        "mkt_email_sends: email_send_id int, campaign_id int, sent_at date, recipients int",
        "mkt_email_events: email_event_id int, email_send_id int, event_type text, occurred_at date",
        "mkt_attribution: attribution_id int, order_id int, campaign_id int, attribution_weight numeric  # Multi-touch attribution of orders to campaigns",
        "mkt_landing_pages: landing_page_id int, url_path text, campaign_id int",
        "mkt_surveys: survey_id int, survey_name text, sent_on date",
        "mkt_survey_responses: response_id int, survey_id int, customer_id int, nps_score int",
        "mkt_segments: segment_id int, segment_name text, rule_text text",
        "mkt_coupons: coupon_id int, coupon_code text, campaign_id int, redeemed_count int",
    ],
    "inv": [
        "inv_products: product_id int, sku text, product_name text, category_id int, brand text, unit_cost numeric",
        "inv_categories: category_id int, category_name text, parent_category_id int",
        "inv_warehouses: warehouse_id int, warehouse_name text, city text, capacity_units int",
        "inv_stock_levels: stock_level_id int, product_id int, warehouse_id int, snapshot_date date, on_hand_qty int, reserved_qty int  # Daily stock on hand per product and warehouse",
        "inv_stock_movements: movement_id int, product_id int, warehouse_id int, moved_at date, movement_type text, quantity int",
        "inv_suppliers: supplier_id int, supplier_name text, country_code text, lead_time_days int",
        "inv_purchase_orders: purchase_order_id int, supplier_id int, ordered_on date, po_status text, expected_on date",
        "inv_purchase_order_lines: po_line_id int, purchase_order_id int, product_id int, ordered_qty int, unit_cost numeric",
        "inv_stock_counts: stock_count_id int, warehouse_id int, counted_on date, variance_units int",
        "inv_reorder_rules: reorder_rule_id int, product_id int, warehouse_id int, reorder_point int",
        "inv_product_bundles: bundle_id int, product_id int, component_product_id int, component_qty int",
    ],
    "sup": [
        "sup_tickets: ticket_id int, customer_id int, opened_at date, closed_at date, priority text, ticket_status text, category text  # Customer support tickets",
        "sup_ticket_comments: comment_id int, ticket_id int, agent_id int, commented_at date, is_public int",
        "sup_agents: agent_id int, employee_id int, team_name text, shift text",
        "sup_sla_policies: sla_policy_id int, priority text, first_response_hours int, resolution_hours int",
        "sup_csat_ratings: csat_id int, ticket_id int, rating int, rated_at date  # Customer satisfaction score after a ticket closes",
        "sup_chat_sessions: chat_session_id int, customer_id int, agent_id int, started_at date, duration_seconds int",
        "sup_knowledge_articles: article_id int, title text, views int",
        "sup_escalations: escalation_id int, ticket_id int, escalated_at date, escalation_level int",
        "sup_call_logs: call_id int, customer_id int, agent_id int, called_at date, wait_seconds int",
        "sup_macros: macro_id int, macro_name text, usage_count int",
        "sup_ticket_tags: ticket_tag_id int, ticket_id int, tag text",
    ],
    "web": [
        "web_sessions: session_id int, visitor_id int, started_at date, device_type text, traffic_source text, landing_page_id int",
        "web_page_views: page_view_id int, session_id int, url_path text, viewed_at date, time_on_page_seconds int",
        "web_visitors: visitor_id int, first_seen date, customer_id int, country_code text",
        "web_events: event_id int, session_id int, event_name text, occurred_at date",
        "web_carts: cart_id int, session_id int, created_at date, cart_value numeric, abandoned int  # Shopping carts; abandoned = 1 when no order followed",
        "web_cart_items: cart_item_id int, cart_id int, product_id int, quantity int",
        "web_search_queries: search_query_id int, session_id int, query_text text, results_count int",
        "web_ab_tests: ab_test_id int, test_name text, started_on date",
        "web_ab_assignments: assignment_id int, ab_test_id int, visitor_id int, variant text, converted int",
        "web_errors: web_error_id int, session_id int, http_status int, url_path text",
        "web_referrers: referrer_id int, referrer_domain text, referrer_type text",
    ],
    "log": [
        "log_shipments: shipment_id int, order_id int, carrier_id int, shipped_on date, delivered_on date, shipment_status text  # Outbound shipments of sales orders",
        "log_carriers: carrier_id int, carrier_name text, service_level text",
        "log_shipping_rates: shipping_rate_id int, carrier_id int, zone text, rate_per_kg numeric",
        "log_delivery_exceptions: exception_id int, shipment_id int, exception_type text, reported_at date",
        "log_routes: route_id int, origin_warehouse_id int, destination_region_id int, transit_days int",
        "log_vehicles: vehicle_id int, plate_number text, capacity_kg int",
        "log_fuel_logs: fuel_log_id int, vehicle_id int, filled_on date, liters numeric, fuel_cost numeric",
        "log_drivers: driver_id int, full_name text, license_class text",
        "log_packages: package_id int, shipment_id int, weight_kg numeric, dimensions text",
        "log_tracking_events: tracking_event_id int, shipment_id int, event_time date, location text, scan_type text",
        "log_freight_invoices: freight_invoice_id int, carrier_id int, invoiced_on date, freight_amount numeric",
    ],
    "bill": [
        "bill_subscriptions: subscription_id int, customer_id int, plan_id int, started_on date, cancelled_on date, subscription_status text  # Recurring subscriptions",
        "bill_plans: plan_id int, plan_name text, monthly_price numeric, billing_interval text",
        "bill_usage_records: usage_record_id int, subscription_id int, usage_date date, metric text, units numeric",
        "bill_charges: charge_id int, subscription_id int, charged_on date, charge_amount numeric, charge_status text",
        "bill_credit_notes: credit_note_id int, charge_id int, issued_on date, credit_amount numeric",
        "bill_dunning_attempts: dunning_attempt_id int, charge_id int, attempted_on date, outcome text",
        "bill_plan_changes: plan_change_id int, subscription_id int, from_plan_id int, to_plan_id int, changed_on date",
        "bill_mrr_snapshots: mrr_snapshot_id int, snapshot_month date, subscription_id int, mrr_amount numeric  # Monthly recurring revenue per subscription",
        "bill_trials: trial_id int, customer_id int, trial_started_on date, converted int",
        "bill_payment_methods: payment_method_id int, customer_id int, method_type text, expires_on date",
        "bill_churn_reasons: churn_reason_id int, subscription_id int, reason text",
    ],
    "prod": [
        "prod_features: feature_id int, feature_name text, released_on date, owner_team text",
        "prod_feature_usage: feature_usage_id int, feature_id int, customer_id int, used_on date, usage_count int  # Daily use of product features per customer account",
        "prod_releases: release_id int, version text, released_on date",
        "prod_bugs: bug_id int, feature_id int, reported_on date, severity text, bug_status text",
        "prod_feature_requests: feature_request_id int, customer_id int, requested_on date, votes int, title text",
        "prod_experiments: experiment_id int, feature_id int, hypothesis text, started_on date",
        "prod_user_accounts: user_account_id int, customer_id int, created_on date, role text, last_login_on date",
        "prod_logins: login_id int, user_account_id int, logged_in_at date, device_type text",
        "prod_roadmap_items: roadmap_item_id int, title text, target_quarter text",
        "prod_incidents: incident_id int, started_at date, resolved_at date, severity text, root_cause text  # Production outages",
        "prod_api_calls: api_call_id int, user_account_id int, called_on date, endpoint text, call_count int",
    ],
}
# Derived tables per core table (the noise of a real warehouse); each name adds to the core table's name.
DERIVED = ["stg_{}", "{}_history", "agg_{}_monthly"]
DERIVED_COMMENTS = {"stg_{}": "Raw load from the source system; not deduplicated"}
AUDIT = [
    "created_at timestamp",
    "updated_at timestamp",
    "created_by text",
    "updated_by text",
    "etl_batch_id int",
    "source_system text",
    "is_deleted int",
    "valid_from timestamp",
    "valid_to timestamp",
    "row_hash text",
    "load_ts timestamp",
    "tenant_id int",
    "record_version int",
    "ingested_file text",
    "dw_key int",
    "checksum text",
    "partition_date date",
    "extract_id int",
    "sync_status text",
    "lineage_id int",
]

# (question, tables it needs)
QUESTIONS: list[tuple[str, set[str]]] = [
    (
        "What was the total refund paid on returned items last quarter, by return reason?",
        {"sales_returns"},
    ),
    ("Which customer segment placed the most orders in 2024?", {"sales_orders", "sales_customers"}),
    ("Revenue by store region for March", {"sales_orders", "sales_stores", "sales_regions"}),
    ("Average discount per order line for each product", {"sales_order_lines", "inv_products"}),
    ("How did each sales rep do against their quarterly quota?", {"sales_quotas", "sales_reps"}),
    (
        "Which promotions were applied to the most orders?",
        {"sales_promotions", "sales_order_promotions"},
    ),
    (
        "Total debits and credits per general ledger account in January",
        {"fin_journal_entries", "fin_gl_accounts"},
    ),
    ("How much of the invoiced amount is overdue by customer?", {"fin_invoices"}),
    ("Payments received per payment method this year", {"fin_payments"}),
    (
        "Actual spend against budget per cost center for fiscal year 2024",
        {"fin_budgets", "fin_cost_centers", "fin_journal_entries"},
    ),
    (
        "Which suppliers have the largest unpaid vendor bills?",
        {"fin_vendor_bills", "inv_suppliers"},
    ),
    (
        "Convert order totals to USD using the exchange rate of the order date",
        {"sales_orders", "fin_exchange_rates"},
    ),
    ("Headcount by department at the end of last year", {"hr_employees", "hr_departments"}),
    ("Average annual salary per job level", {"hr_salaries", "hr_employees", "hr_job_titles"}),
    ("How many leave days were approved per leave type?", {"hr_leave_requests"}),
    ("Distribution of performance review ratings in 2023", {"hr_performance_reviews"}),
    (
        "Which training courses have the highest completion count?",
        {"hr_trainings", "hr_training_enrollments"},
    ),
    ("Recruiting pipeline: candidates per stage and source", {"hr_recruiting_candidates"}),
    ("Cost per click for each marketing campaign", {"mkt_ad_spend", "mkt_campaigns"}),
    (
        "How many leads did each campaign generate, and how many converted?",
        {"mkt_leads", "mkt_campaigns"},
    ),
    ("Email open rate per campaign", {"mkt_email_events", "mkt_email_sends"}),
    ("Revenue attributed to each campaign", {"mkt_attribution", "sales_orders"}),
    ("Average NPS score per survey", {"mkt_survey_responses", "mkt_surveys"}),
    ("Which coupon codes were redeemed most often?", {"mkt_coupons"}),
    ("Stock on hand per warehouse yesterday", {"inv_stock_levels", "inv_warehouses"}),
    ("Which products are below their reorder point?", {"inv_reorder_rules", "inv_stock_levels"}),
    (
        "Open purchase orders per supplier with expected arrival dates",
        {"inv_purchase_orders", "inv_suppliers"},
    ),
    ("Units sold per product category", {"sales_order_lines", "inv_products", "inv_categories"}),
    ("Average supplier lead time by country", {"inv_suppliers"}),
    ("Median time to close support tickets by priority", {"sup_tickets"}),
    ("Which support agents handled the most chat sessions?", {"sup_chat_sessions", "sup_agents"}),
    ("Customer satisfaction rating per ticket category", {"sup_csat_ratings", "sup_tickets"}),
    ("How many tickets were escalated, per escalation level?", {"sup_escalations"}),
    ("Average call wait time per agent", {"sup_call_logs", "sup_agents"}),
    ("Sessions and page views per traffic source", {"web_sessions", "web_page_views"}),
    ("Cart abandonment rate by device type", {"web_carts", "web_sessions"}),
    ("Conversion by variant for each A/B test", {"web_ab_assignments", "web_ab_tests"}),
    ("Most common on-site search queries with no results", {"web_search_queries"}),
    ("On-time delivery rate per carrier", {"log_shipments", "log_carriers"}),
    ("Delivery exceptions per type last month", {"log_delivery_exceptions"}),
    ("Fuel cost per vehicle", {"log_fuel_logs", "log_vehicles"}),
    (
        "Monthly recurring revenue by plan",
        {"bill_mrr_snapshots", "bill_subscriptions", "bill_plans"},
    ),
    ("Why do subscriptions churn? Count of churn reasons", {"bill_churn_reasons"}),
    ("Trial to paid conversion rate per month", {"bill_trials"}),
    ("Failed charges recovered by dunning attempts", {"bill_dunning_attempts", "bill_charges"}),
    (
        "Which features are used by the most customer accounts?",
        {"prod_feature_usage", "prod_features"},
    ),
    ("Open bugs per feature by severity", {"prod_bugs", "prod_features"}),
    ("Number of production incidents and their root causes this year", {"prod_incidents"}),
]


@dataclass
class Table:
    name: str
    columns: list[tuple[str, str]]
    comment: str = ""
    fks: list[tuple[str, str, str]] = field(default_factory=list)  # (column, ref table, ref column)


def tables(width: int = 0) -> list[Table]:
    """Every table: the core ones with their keys, then the derived ones; padded to ``width`` columns."""
    core: list[Table] = []
    for specs in AREAS.values():
        for spec in specs:
            spec, _, comment = spec.partition("#")
            name, _, cols = spec.partition(":")
            columns = [tuple(c.strip().split(" ", 1)) for c in cols.split(",")]
            core.append(Table(name.strip(), columns, comment.strip()))  # type: ignore[arg-type]
    keys: dict[str, str] = {}
    for t in (
        core
    ):  # the first table keyed by a column owns it (a link table keyed by order_id does not)
        keys.setdefault(t.columns[0][0], t.name)
    for table in core:
        for col, _ in table.columns[1:]:
            if col in keys and keys[col] != table.name:
                table.fks.append((col, keys[col], col))
    derived = [
        Table(pattern.format(t.name), list(t.columns), DERIVED_COMMENTS.get(pattern, ""))
        for t in core
        for pattern in DERIVED
    ]
    every = core + derived
    for table in every:
        have = {c for c, _ in table.columns}
        padding = [tuple(a.split(" ")) for a in AUDIT if a.split(" ")[0] not in have]
        padding += [(f"attr_{i + 1:02d}", "text") for i in range(width)]
        table.columns += padding[: max(0, width - len(table.columns))]  # type: ignore[arg-type]
    return every


SQL_TYPES = {
    "int": "INTEGER",
    "text": "TEXT",
    "numeric": "NUMERIC(14,2)",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
}


def ddl(dialect: str, width: int = 0) -> list[str]:
    """CREATE TABLE statements (and COMMENT ON for PostgreSQL) for ``dialect``: sqlite, postgresql, mysql."""
    out: list[str] = []
    quote = (lambda s: f"`{s}`") if dialect == "mysql" else (lambda s: f'"{s}"')
    every = tables(width)
    for table in every:
        cols = []
        for i, (col, typ) in enumerate(table.columns):
            sql_type = SQL_TYPES[typ] if dialect != "mysql" or typ != "text" else "VARCHAR(200)"
            line = f"{quote(col)} {sql_type}" + (" PRIMARY KEY" if i == 0 else "")
            cols.append(line)
        if dialect == "sqlite":
            cols += [
                f"FOREIGN KEY ({quote(c)}) REFERENCES {quote(r)}({quote(rc)})"
                for c, r, rc in table.fks
            ]
        tail = f" COMMENT='{table.comment}'" if dialect == "mysql" and table.comment else ""
        out.append(f"CREATE TABLE {quote(table.name)} ({', '.join(cols)}){tail}")
        if dialect == "postgresql" and table.comment:
            out.append(f"COMMENT ON TABLE {quote(table.name)} IS '{table.comment}'")
    if dialect != "sqlite":
        for table in every:
            for c, r, rc in table.fks:
                out.append(
                    f"ALTER TABLE {quote(table.name)} ADD FOREIGN KEY ({quote(c)}) REFERENCES {quote(r)}({quote(rc)})"
                )
    return out


def sqlite_warehouse(path: Path, width: int = 0) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        "BEGIN;\n" + ";\n".join(ddl("sqlite", width)) + ";\nCOMMIT;"
    )  # one transaction
    conn.close()
    return path

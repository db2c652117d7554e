"""A deterministic retail data set: stores, products, customers, promotions, orders,
order_items and refunds. The same seed and scale always give the same rows.

    python -m examples.retail.generate retail.db            # ~200,000 orders into SQLite
    python -m examples.retail.generate retail.db --orders 2000
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# column kinds -> SQL types per dialect
TYPES = {
    "id": {"sqlite": "INTEGER", "postgresql": "BIGINT", "mysql": "BIGINT", "duckdb": "BIGINT"},
    "int": {"sqlite": "INTEGER", "postgresql": "INTEGER", "mysql": "INT", "duckdb": "INTEGER"},
    "text": {"sqlite": "TEXT", "postgresql": "TEXT", "mysql": "VARCHAR(200)", "duckdb": "VARCHAR"},
    "money": {
        "sqlite": "NUMERIC",
        "postgresql": "NUMERIC(12,2)",
        "mysql": "DECIMAL(12,2)",
        "duckdb": "DECIMAL(12,2)",
    },
    "pct": {
        "sqlite": "REAL",
        "postgresql": "NUMERIC(5,2)",
        "mysql": "DECIMAL(5,2)",
        "duckdb": "DECIMAL(5,2)",
    },
    "date": {"sqlite": "TEXT", "postgresql": "DATE", "mysql": "DATE", "duckdb": "DATE"},
    "ts": {"sqlite": "TEXT", "postgresql": "TIMESTAMP", "mysql": "DATETIME", "duckdb": "TIMESTAMP"},
}


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]  # (name, kind); the first column is the primary key
    references: tuple[tuple[str, str], ...] = ()  # (column, referenced table)
    nullable: tuple[str, ...] = ()

    def ddl(self, dialect: str, prefix: str = "") -> str:
        cols = []
        for i, (name, kind) in enumerate(self.columns):
            null = "" if name in self.nullable else " NOT NULL"
            pk = " PRIMARY KEY" if i == 0 else ""
            cols.append(f"{name} {TYPES[kind][dialect]}{null}{pk}")
        for col, ref in self.references:
            ref_pk = TABLES_BY_NAME[ref].columns[0][0]
            cols.append(f"FOREIGN KEY ({col}) REFERENCES {prefix}{ref}({ref_pk})")
        return f"CREATE TABLE {prefix}{self.name} (\n  " + ",\n  ".join(cols) + "\n)"

    @property
    def column_names(self) -> list[str]:
        return [c for c, _ in self.columns]


TABLES = (
    Table(
        "stores",
        (
            ("store_id", "id"),
            ("name", "text"),
            ("city", "text"),
            ("region", "text"),
            ("opened_on", "date"),
        ),
    ),
    Table(
        "products",
        (
            ("product_id", "id"),
            ("sku", "text"),
            ("name", "text"),
            ("category", "text"),
            ("unit_price", "money"),
            ("unit_cost", "money"),
        ),
    ),
    Table(
        "customers",
        (
            ("customer_id", "id"),
            ("name", "text"),
            ("email", "text"),
            ("city", "text"),
            ("region", "text"),
            ("segment", "text"),
            ("signup_date", "date"),
        ),
    ),
    Table(
        "promotions",
        (
            ("promotion_id", "id"),
            ("code", "text"),
            ("description", "text"),
            ("discount_pct", "pct"),
            ("starts_on", "date"),
            ("ends_on", "date"),
        ),
    ),
    Table(
        "orders",
        (
            ("order_id", "id"),
            ("customer_id", "id"),
            ("store_id", "id"),
            ("promotion_id", "id"),
            ("ordered_at", "ts"),
            ("channel", "text"),
            ("status", "text"),
            ("total", "money"),
        ),
        references=(
            ("customer_id", "customers"),
            ("store_id", "stores"),
            ("promotion_id", "promotions"),
        ),
        nullable=("promotion_id",),
    ),
    Table(
        "order_items",
        (
            ("order_item_id", "id"),
            ("order_id", "id"),
            ("product_id", "id"),
            ("quantity", "int"),
            ("unit_price", "money"),
            ("discount", "money"),
        ),
        references=(("order_id", "orders"), ("product_id", "products")),
    ),
    Table(
        "refunds",
        (
            ("refund_id", "id"),
            ("order_id", "id"),
            ("refunded_at", "ts"),
            ("amount", "money"),
            ("reason", "text"),
        ),
        references=(("order_id", "orders"),),
    ),
)
TABLES_BY_NAME = {t.name: t for t in TABLES}

CITIES = [
    ("Seattle", "West"),
    ("Portland", "West"),
    ("San Francisco", "West"),
    ("Los Angeles", "West"),
    ("Denver", "Mountain"),
    ("Phoenix", "Mountain"),
    ("Salt Lake City", "Mountain"),
    ("Dallas", "South"),
    ("Houston", "South"),
    ("Atlanta", "South"),
    ("Miami", "South"),
    ("Chicago", "Midwest"),
    ("Minneapolis", "Midwest"),
    ("Detroit", "Midwest"),
    ("New York", "Northeast"),
    ("Boston", "Northeast"),
    ("Philadelphia", "Northeast"),
    ("Pittsburgh", "Northeast"),
]
CATEGORIES = {
    "grocery": (2, 40),
    "household": (3, 60),
    "electronics": (20, 900),
    "apparel": (8, 150),
    "toys": (5, 120),
    "beauty": (4, 80),
    "garden": (6, 200),
    "sports": (10, 400),
}
FIRST = [
    "Ava",
    "Ben",
    "Chloe",
    "Dev",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jon",
    "Kira",
    "Liam",
    "Maya",
    "Noah",
    "Olga",
    "Priya",
    "Quinn",
    "Rosa",
    "Sam",
    "Tara",
    "Uma",
    "Victor",
    "Wen",
    "Xavier",
    "Yara",
    "Zoe",
]
LAST = [
    "Smith",
    "Garcia",
    "Chen",
    "Okafor",
    "Novak",
    "Patel",
    "Kim",
    "Rossi",
    "Silva",
    "Müller",
    "Haddad",
    "Ivanova",
    "Tanaka",
    "Brown",
    "Nguyen",
    "O'Brien",
    "Lopez",
    "Khan",
]
SEGMENTS = ["consumer", "consumer", "consumer", "small_business", "corporate"]
CHANNELS = ["store", "store", "store", "web", "web", "app"]
STATUSES = ["completed"] * 17 + ["cancelled", "returned", "pending"]
REASONS = ["damaged", "wrong item", "late delivery", "changed mind", "defective"]
START = dt.datetime(2023, 1, 1)
SPAN_S = 2 * 365 * 24 * 3600


@dataclass(frozen=True)
class Scale:
    orders: int = 200_000

    @property
    def customers(self) -> int:
        return max(50, self.orders // 4)

    @property
    def products(self) -> int:
        return max(50, min(2000, self.orders // 10))

    @property
    def stores(self) -> int:
        return 40 if self.orders >= 10_000 else 8

    @property
    def promotions(self) -> int:
        return 60 if self.orders >= 10_000 else 10


def generate(orders: int = 200_000, seed: int = 7) -> dict[str, Iterator[tuple]]:
    """Rows per table (generators, in dependency order). Deterministic for (orders, seed)."""
    scale = Scale(orders)
    rng = random.Random(seed)
    prices: list[float] = []

    def stores() -> Iterator[tuple]:
        for i in range(1, scale.stores + 1):
            city, region = CITIES[(i - 1) % len(CITIES)]
            opened = dt.date(2015, 1, 1) + dt.timedelta(days=rng.randrange(2900))
            yield (i, f"{city} #{(i - 1) // len(CITIES) + 1}", city, region, opened.isoformat())

    def products() -> Iterator[tuple]:
        cats = list(CATEGORIES)
        for i in range(1, scale.products + 1):
            cat = cats[i % len(cats)]
            lo, hi = CATEGORIES[cat]
            price = round(rng.uniform(lo, hi), 2)
            prices.append(price)
            yield (
                i,
                f"SKU-{i:06d}",
                f"{cat.title()} item {i}",
                cat,
                price,
                round(price * rng.uniform(0.4, 0.8), 2),
            )

    def customers() -> Iterator[tuple]:
        for i in range(1, scale.customers + 1):
            first, last = rng.choice(FIRST), rng.choice(LAST)
            city, region = rng.choice(CITIES)
            signup = dt.date(2020, 1, 1) + dt.timedelta(days=rng.randrange(1800))
            email = f"{first.lower()}.{i}@example.com"
            yield (
                i,
                f"{first} {last}",
                email,
                city,
                region,
                rng.choice(SEGMENTS),
                signup.isoformat(),
            )

    promo_windows: list[tuple[float, float, float]] = []

    def promotions() -> Iterator[tuple]:
        for i in range(1, scale.promotions + 1):
            start = rng.randrange(SPAN_S - 30 * 86400)
            length = rng.randrange(7, 45) * 86400
            pct = float(rng.choice([5, 10, 15, 20, 25, 30]))
            promo_windows.append((start, start + length, pct))
            s = (START + dt.timedelta(seconds=start)).date()
            e = (START + dt.timedelta(seconds=start + length)).date()
            yield (
                i,
                f"PROMO{i:03d}",
                f"{int(pct)}% off event {i}",
                pct,
                s.isoformat(),
                e.isoformat(),
            )

    order_rows: list[tuple] = []
    item_rows: list[tuple] = []
    refund_rows: list[tuple] = []

    def build_orders() -> None:
        # The hot loop: random.random() and indexing instead of randrange/choice (several times faster).
        rand = rng.random
        n_products, n_customers, n_stores = scale.products, scale.customers, scale.stores
        n_promos = len(promo_windows)
        n_status, n_channel, n_reason = len(STATUSES), len(CHANNELS), len(REASONS)
        item_id = 0
        refund_id = 0
        offsets = sorted(int(rand() * SPAN_S) for _ in range(orders))
        start_ts = START
        delta = dt.timedelta
        for order_id in range(1, orders + 1):
            offset = offsets[order_id - 1]
            promo = None
            pct = 0.0
            if n_promos and rand() < 0.15:
                p = int(rand() * n_promos)
                if promo_windows[p][0] <= offset <= promo_windows[p][1] or rand() < 0.3:
                    promo, pct = p + 1, promo_windows[p][2]
            total = 0.0
            for _ in range(1 + int(rand() * rand() * 6)):
                item_id += 1
                product = 1 + int(rand() * n_products)
                qty = 1 + int(rand() * rand() * 4)
                price = prices[product - 1]
                discount = round(price * qty * pct / 100.0, 2)
                total += price * qty - discount
                item_rows.append((item_id, order_id, product, qty, price, discount))
            when = start_ts + delta(seconds=offset)
            status = STATUSES[int(rand() * n_status)]
            order_rows.append(
                (
                    order_id,
                    1 + int(rand() * n_customers),
                    1 + int(rand() * n_stores),
                    promo,
                    str(when),
                    CHANNELS[int(rand() * n_channel)],
                    status,
                    round(total, 2),
                )
            )
            if status == "returned" or rand() < 0.02:
                refund_id += 1
                later = when + delta(seconds=3600 + int(rand() * 30 * 86400))
                share = 1.0 if status == "returned" else round(rand() * 0.8 + 0.1, 2)
                refund_rows.append(
                    (
                        refund_id,
                        order_id,
                        str(later),
                        round(total * share, 2),
                        REASONS[int(rand() * n_reason)],
                    )
                )

    def lazy(rows: list[tuple]) -> Iterator[tuple]:
        if not order_rows:
            build_orders()
        yield from rows

    # Dimensions first (small, and the facts draw on their prices and promotion windows).
    dims = {
        "stores": list(stores()),
        "products": list(products()),
        "customers": list(customers()),
        "promotions": list(promotions()),
    }
    return {
        **{name: iter(rows) for name, rows in dims.items()},
        "orders": lazy(order_rows),
        "order_items": lazy(item_rows),
        "refunds": lazy(refund_rows),
    }


def write_sqlite(path: str | Path, orders: int = 200_000, seed: int = 7) -> dict[str, int]:
    """Create (replace) a SQLite file with the data set; returns rows per table."""
    path = Path(path)
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    counts: dict[str, int] = {}
    with conn:
        for table in TABLES:
            conn.execute(table.ddl("sqlite"))
        for name, rows in generate(orders, seed).items():
            cols = TABLES_BY_NAME[name].column_names
            cur = conn.executemany(
                f"INSERT INTO {name} VALUES ({', '.join('?' * len(cols))})", rows
            )
            counts[name] = cur.rowcount
        conn.execute("CREATE INDEX orders_customer ON orders(customer_id)")
        conn.execute("CREATE INDEX orders_ordered_at ON orders(ordered_at)")
        conn.execute("CREATE INDEX order_items_order ON order_items(order_id)")
    conn.execute("ANALYZE")
    conn.close()
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", help="SQLite file to create (replaced if it exists)")
    parser.add_argument("--orders", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    counts = write_sqlite(args.path, args.orders, args.seed)
    took = time.perf_counter() - started
    print(", ".join(f"{k} {v:,}" for k, v in counts.items()) + f" -> {args.path} in {took:.1f} s")


if __name__ == "__main__":
    main()

"""What the read-only check lets run, per dialect: functions, system views, SHOW kinds.

Everything not named here is refused (``guard.check_read_only``). The lists
hold what analysts use: aggregates, window functions, string, date/time,
math, JSON, casts, array/list functions and ``generate_series``-style
generators, plus the catalog views and table functions that describe a
schema. Names are the server's names, as the server resolves them (lower
case; PostgreSQL built-ins also as ``pg_catalog.name``). A datasource may add
its own read-only functions (``allow_functions``); never one of ``NEVER``.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Functions whose argument is SQL text (they run it), or that reach other
# servers: never allowed, not even by a datasource's ``allow_functions``.
NEVER = _words("""
    ts_stat ts_rewrite query_to_xml query_to_xmlschema query_to_xml_and_xmlschema cursor_to_xml cursor_to_xmlschema
    table_to_xml table_to_xmlschema table_to_xml_and_xmlschema schema_to_xml schema_to_xmlschema
    schema_to_xml_and_xmlschema database_to_xml database_to_xmlschema database_to_xml_and_xmlschema
    dblink dblink_exec dblink_open dblink_fetch dblink_send_query dblink_get_result dblink_connect dblink_connect_u
    query query_table json_execute_serialized_sql json_serialize_sql json_deserialize_sql json_serialize_plan
    eval sys_exec sys_eval load_file load_extension readfile writefile edit pg_read_file pg_read_binary_file
""")

# Shared by several dialects: standard aggregates, window functions, math, conditional.
_STANDARD = _words("""
    count sum avg min max coalesce nullif greatest least abs ceil ceiling floor round sign sqrt exp ln log log10
    power pow mod pi sin cos tan asin acos atan atan2 cot degrees radians trunc
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
    lower upper length char_length character_length octet_length bit_length substring substr trim ltrim rtrim
    replace reverse repeat lpad rpad left right concat concat_ws position strpos instr md5
    stddev stddev_pop stddev_samp variance var_pop var_samp corr covar_pop covar_samp
    regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy
    bit_and bit_or bit_xor cast extract
""")

FUNCTIONS: dict[str, frozenset[str]] = {
    "postgresql": _STANDARD
    | _words("""
        every bool_and bool_or array_agg string_agg json_agg jsonb_agg json_object_agg jsonb_object_agg
        json_agg_strict jsonb_agg_strict json_object_agg_strict jsonb_object_agg_strict any_value
        mode percentile_cont percentile_disc range_agg range_intersect_agg xmlagg
        cbrt div factorial gcd lcm min_scale scale trim_scale width_bucket random log2
        asind acosd atand atan2d sind cosd tand cotd sinh cosh tanh asinh acosh atanh
        ascii btrim chr format initcap normalize overlay quote_ident quote_literal quote_nullable
        regexp_count regexp_instr regexp_like regexp_match regexp_matches regexp_replace regexp_split_to_array
        regexp_split_to_table regexp_substr split_part starts_with string_to_array string_to_table to_hex
        translate unistr encode decode sha224 sha256 sha384 sha512 convert_from convert_to get_byte crc32
        to_char to_date to_number to_timestamp gen_random_uuid
        age clock_timestamp date_add date_bin date_part date_subtract date_trunc isfinite justify_days
        justify_hours justify_interval make_date make_interval make_time make_timestamp make_timestamptz now
        statement_timestamp timeofday transaction_timestamp timezone
        generate_series generate_subscripts unnest
        array_append array_cat array_dims array_fill array_length array_lower array_ndims array_position
        array_positions array_prepend array_remove array_replace array_to_string array_upper cardinality
        trim_array array_sample array_shuffle
        to_json to_jsonb array_to_json row_to_json json_build_array jsonb_build_array json_build_object
        jsonb_build_object json_object jsonb_object json_array_elements jsonb_array_elements
        json_array_elements_text jsonb_array_elements_text json_array_length jsonb_array_length json_each
        jsonb_each json_each_text jsonb_each_text json_extract_path jsonb_extract_path json_extract_path_text
        jsonb_extract_path_text json_object_keys jsonb_object_keys json_populate_record jsonb_populate_record
        json_populate_recordset jsonb_populate_recordset json_to_record jsonb_to_record json_to_recordset
        jsonb_to_recordset json_strip_nulls jsonb_strip_nulls jsonb_set jsonb_set_lax jsonb_insert
        jsonb_path_exists jsonb_path_match jsonb_path_query jsonb_path_query_array jsonb_path_query_first
        jsonb_pretty json_typeof jsonb_typeof json_scalar json_array json_serialize
        to_tsvector to_tsquery plainto_tsquery phraseto_tsquery websearch_to_tsquery ts_rank ts_rank_cd
        ts_headline setweight tsvector_to_array array_to_tsvector numnode querytree strip
        isempty lower_inc upper_inc lower_inf upper_inf range_merge int4range int8range numrange tsrange
        tstzrange daterange
        date text int2 int4 int8 float4 float8 numeric bool row
        num_nonnulls num_nulls pg_typeof current_database current_schema current_schemas current_setting
        version pg_sleep pg_sleep_for pg_sleep_until pg_backend_pid format_type
        pg_size_pretty pg_relation_size pg_total_relation_size
        pg_table_size pg_indexes_size pg_get_viewdef pg_get_indexdef pg_get_constraintdef
        obj_description col_description pg_table_is_visible has_table_privilege has_schema_privilege
        has_column_privilege has_any_column_privilege has_database_privilege has_function_privilege
        has_sequence_privilege grouping array xmlparse
    """),
    "mysql": _STANDARD
    | _words("""
        group_concat json_arrayagg json_objectagg std median percentile_cont percentile_disc
        conv crc32 log2 rand truncate format hex unhex bin oct div
        char elt field find_in_set from_base64 to_base64 lcase ucase locate make_set mid ord quote
        regexp_instr regexp_like regexp_replace regexp_substr soundex space strcmp substring_index sha1 sha sha2
        uuid natural_sort_key export_set collation charset
        adddate addtime add_months convert_tz curdate current_date current_time current_timestamp curtime date
        date_add date_format date_sub datediff day dayname dayofmonth dayofweek dayofyear from_days
        from_unixtime get_format hour last_day localtime localtimestamp makedate maketime microsecond minute
        month monthname now period_add period_diff quarter sec_to_time second str_to_date subdate subtime
        sysdate time time_format time_to_sec timediff timestamp timestampadd timestampdiff to_days to_seconds
        unix_timestamp utc_date utc_time utc_timestamp week weekday weekofyear year yearweek
        json_array json_array_append json_array_insert json_compact json_contains json_contains_path
        json_depth json_detailed json_exists json_extract json_insert json_keys json_length json_loose
        json_merge json_merge_patch json_merge_preserve json_normalize json_object json_overlaps json_pretty
        json_query json_quote json_remove json_replace json_search json_set json_table json_type json_unquote
        json_valid json_value json_equals
        if ifnull isnull convert interval row database schema version current_user user connection_id sleep
        ascii to_char insert grouping
    """),
    "sqlite": _STANDARD
    | _words("""
        char format glob hex ifnull iif like likelihood likely printf quote random randomblob soundex
        sqlite_version typeof unhex unicode unlikely zeroblob
        date time datetime julianday unixepoch strftime timediff
        group_concat string_agg total median
        ln log2 cosh sinh tanh
        json jsonb json_array jsonb_array json_array_length json_error_position json_extract jsonb_extract
        json_insert jsonb_insert json_object jsonb_object json_patch jsonb_patch json_remove jsonb_remove
        json_replace jsonb_replace json_set jsonb_set json_type json_valid json_quote json_group_array
        jsonb_group_array json_group_object jsonb_group_object json_each json_tree
        pragma_table_info pragma_table_xinfo pragma_index_list pragma_index_info pragma_index_xinfo
        pragma_foreign_key_list pragma_table_list generate_series
    """),
    "duckdb": _STANDARD
    | _words("""
        count_if countif grouping grouping_id
        any_value arbitrary arg_max arg_min argmax argmin max_by min_by bool_and bool_or count_star favg fsum
        first last histogram list array_agg product string_agg group_concat listagg approx_count_distinct
        approx_quantile entropy kurtosis kurtosis_pop mad median mode quantile quantile_cont quantile_disc
        skewness reservoir_quantile geomean geometric_mean bitstring_agg weighted_avg
        cbrt bit_count even factorial gamma lgamma gcd lcm greatest_common_divisor least_common_multiple
        isnan isinf isfinite log2 nextafter random round_even signbit xor divide add subtract multiply fdiv fmod
        ascii bar chr contains ends_with suffix prefix starts_with format formatreadablesize format_bytes
        from_base64 to_base64 hash lcase ucase len strlen levenshtein damerau_levenshtein hamming jaccard
        jaro_similarity jaro_winkler_similarity editdist3 md5_number sha1 sha256 nfc_normalize printf
        regexp_extract regexp_extract_all regexp_full_match regexp_matches regexp_replace
        regexp_split_to_array regexp_split_to_table regexp_escape split string_split str_split
        string_split_regex str_split_regex split_part substring_grapheme translate unicode ord initcap
        to_char to_date to_timestamp
        age current_date current_time current_timestamp now today get_current_timestamp date_add date_diff
        datediff date_part datepart date_sub datesub date_trunc datetrunc dayname monthname last_day make_date
        make_time make_timestamp make_timestamptz strftime strptime try_strptime time_bucket epoch epoch_ms
        epoch_us epoch_ns year month day hour minute second week weekday weekofyear dayofweek dayofmonth
        dayofyear quarter isodow isoyear yearweek millisecond microsecond era decade century millennium
        to_days to_hours to_minutes to_seconds to_months to_years to_weeks to_milliseconds to_microseconds
        timezone julian
        list_value list_pack list_extract list_element array_extract list_concat list_cat array_concat
        array_cat list_contains list_has array_contains array_has list_position list_indexof array_position
        array_indexof list_slice array_slice list_sort array_sort list_reverse_sort array_reverse_sort
        list_distinct array_distinct list_unique array_unique list_filter array_filter filter list_transform
        array_transform apply list_apply array_apply list_reduce array_reduce reduce list_aggregate
        array_aggregate list_aggr aggregate list_zip array_zip list_has_all list_has_any array_has_all
        array_has_any list_resize array_resize list_reverse array_reverse flatten array_length list_select
        list_where list_grade_up list_append array_append list_prepend array_prepend array_push_back
        array_push_front list_sum list_avg list_min list_max list_count list_median list_mode list_first
        list_last list_string_agg string_to_array array_value array_to_string list_cosine_similarity
        list_distance list_inner_product array_cosine_similarity array_distance array_inner_product
        generate_series range unnest
        struct_pack struct_extract struct_insert struct_concat row map map_extract element_at map_keys
        map_values map_entries map_from_entries cardinality map_concat map_contains
        json to_json json_extract json_extract_path json_extract_string json_extract_path_text json_value
        json_exists json_array_length json_contains json_keys json_structure json_type json_valid
        json_transform from_json json_transform_strict from_json_strict json_object json_array
        json_merge_patch json_quote array_to_json row_to_json json_group_array json_group_object
        json_group_structure json_pretty json_each json_tree
        columns if ifnull typeof try_cast current_schema current_database version gen_random_uuid uuid
        current_setting pg_typeof
        duckdb_tables duckdb_columns duckdb_views duckdb_schemas duckdb_databases duckdb_types
        duckdb_functions duckdb_indexes duckdb_constraints duckdb_keywords pragma_table_info
    """),
}
FUNCTIONS["mariadb"] = FUNCTIONS["mysql"]

# Schemas a function may be qualified with (the server's own built-ins live there).
FUNCTION_SCHEMAS: dict[str, frozenset[str]] = {"postgresql": frozenset({"pg_catalog"})}

# Schemas whose tables are the server's own: only the views named here may be read
# (the rest hold password hashes, other sessions' queries or the server's files).
SYSTEM_SCHEMAS: dict[str, frozenset[str]] = {
    "postgresql": frozenset({"pg_catalog", "pg_toast", "information_schema"}),
    "mysql": frozenset({"mysql", "performance_schema", "sys", "information_schema"}),
    "sqlite": frozenset(),
    "duckdb": frozenset({"system", "information_schema", "pg_catalog"}),
}
SYSTEM_SCHEMAS["mariadb"] = SYSTEM_SCHEMAS["mysql"]

# Views of extensions PostgreSQL installs outside pg_catalog (in public, as a rule): an unqualified name finds
# them after pg_catalog, which holds no relation of that name. pg_stat_statements shows other roles' query text
# only to roles with pg_read_all_stats (which `assay db doctor` reports).
_PG_EXTENSION_VIEWS = _words("pg_stat_statements pg_stat_statements_info")
_PG_VIEWS = _words("""
    pg_tables pg_views pg_indexes pg_class pg_namespace pg_attribute pg_type pg_constraint pg_index
    pg_description pg_stats pg_stat_user_tables pg_stat_all_tables pg_statio_user_tables pg_stat_user_indexes
    pg_matviews pg_sequences pg_proc pg_roles pg_database pg_am pg_enum pg_inherits pg_settings
    pg_timezone_names pg_timezone_abbrevs pg_collation pg_extension pg_available_extensions pg_attrdef
    pg_range pg_user pg_views pg_policies pg_rules pg_trigger pg_language pg_operator pg_cast
""")
_INFORMATION_SCHEMA = _words("""
    tables columns schemata views table_constraints key_column_usage referential_constraints
    constraint_column_usage check_constraints routines parameters triggers statistics partitions
    character_sets collations engines sequences domains column_privileges table_privileges
    element_types
""")
_SQLITE_TABLES = _words("""
    sqlite_master sqlite_schema sqlite_temp_master sqlite_temp_schema sqlite_sequence sqlite_stat1
    pragma_table_info pragma_table_xinfo pragma_index_list pragma_index_info pragma_index_xinfo
    pragma_foreign_key_list pragma_table_list
""")
_DUCKDB_VIEWS = _words("""
    duckdb_tables duckdb_columns duckdb_views duckdb_schemas duckdb_databases duckdb_types duckdb_functions
    duckdb_indexes duckdb_constraints duckdb_keywords pragma_table_info
""")
# Unqualified table names with these prefixes resolve to the server's own objects (PostgreSQL searches
# pg_catalog first; SQLite's table-valued pragmas and internal tables; DuckDB's catalog views).
SYSTEM_PREFIXES: dict[str, tuple[str, ...]] = {
    "postgresql": ("pg_",),
    "sqlite": ("sqlite_", "pragma_"),
    "duckdb": ("duckdb_", "pragma_"),
    "mysql": (),
    "mariadb": (),
}
# (schema, view) pairs; schema "" = an unqualified name that resolves to the system schema.
SYSTEM_VIEWS: dict[str, frozenset[tuple[str, str]]] = {
    "postgresql": frozenset(
        {("pg_catalog", v) for v in _PG_VIEWS}
        | {("", v) for v in _PG_VIEWS | _PG_EXTENSION_VIEWS}
        | {("information_schema", v) for v in _INFORMATION_SCHEMA}
    ),
    "mysql": frozenset({("information_schema", v) for v in _INFORMATION_SCHEMA}),
    "sqlite": frozenset({(schema, t) for t in _SQLITE_TABLES for schema in ("", "main", "temp")}),
    "duckdb": frozenset(
        {(schema, v) for v in _DUCKDB_VIEWS for schema in ("", "main")}
        | {("information_schema", v) for v in _INFORMATION_SCHEMA}
        | {("pg_catalog", v) for v in _PG_VIEWS}
    ),
}
SYSTEM_VIEWS["mariadb"] = SYSTEM_VIEWS["mysql"]

# MySQL/MariaDB SHOW statements that only describe (no other sessions' queries, no grants of others).
SHOW_KINDS = frozenset(
    {
        "TABLES",
        "FULL TABLES",
        "COLUMNS",
        "FULL COLUMNS",
        "FIELDS",
        "INDEX",
        "INDEXES",
        "KEYS",
        "CREATE TABLE",
        "CREATE VIEW",
        "TABLE STATUS",
        "DATABASES",
        "SCHEMAS",
        "VARIABLES",
        "SESSION VARIABLES",
        "STATUS",
        "SESSION STATUS",
        "WARNINGS",
        "ERRORS",
        "COLLATION",
        "CHARACTER SET",
        "CHARSET",
        "ENGINES",
        "TRIGGERS",
    }
)

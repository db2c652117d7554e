"""Load the retail data set into PostgreSQL (COPY), MariaDB/MySQL (multi-row INSERT) or DuckDB.

    python -m examples.retail.load postgresql://127.0.0.1/test --schema retail --orders 20000
    python -m examples.retail.load mysql://root@127.0.0.1/retail_demo
    python -m examples.retail.load duckdb:///tmp/retail.duckdb

PostgreSQL gets the tables in ``--schema`` (created, replaced); MariaDB gets
them in the URL's database (created if missing, tables replaced).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from .generate import TABLES, TABLES_BY_NAME, generate

_BATCH = 5_000


def load_postgres(
    url: str, schema: str = "retail", orders: int = 200_000, seed: int = 7
) -> dict[str, int]:
    import psycopg

    conninfo = url.replace("postgresql+psycopg://", "postgresql://")
    counts: dict[str, int] = {}
    with psycopg.connect(conninfo) as conn:
        with conn.cursor() as cur:
            cur.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            cur.execute(f'CREATE SCHEMA "{schema}"')
            for table in TABLES:
                cur.execute(table.ddl("postgresql", prefix=f'"{schema}".'))
            for name, rows in generate(orders, seed).items():
                cols = ", ".join(TABLES_BY_NAME[name].column_names)
                n = 0
                with cur.copy(f'COPY "{schema}".{name} ({cols}) FROM STDIN') as copy:
                    for row in rows:
                        copy.write_row(row)
                        n += 1
                counts[name] = n
            cur.execute(f'CREATE INDEX ON "{schema}".orders (customer_id)')
            cur.execute(f'CREATE INDEX ON "{schema}".order_items (order_id)')
            for table in TABLES:
                cur.execute(f'ANALYZE "{schema}".{table.name}')
    return counts


def _mysql_connect(url: str) -> Any:
    import pymysql
    from sqlalchemy.engine import make_url

    u = make_url(url)
    return pymysql.connect(
        host=u.host or "127.0.0.1",
        port=u.port or 3306,
        user=u.username or "root",
        password=u.password or "",
        autocommit=False,
        charset="utf8mb4",
    )


def load_mysql(url: str, orders: int = 200_000, seed: int = 7) -> dict[str, int]:
    from sqlalchemy.engine import make_url

    database = make_url(url).database
    if not database:
        raise ValueError("the MySQL/MariaDB URL must name a database")
    conn = _mysql_connect(url)
    counts: dict[str, int] = {}
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")
            cur.execute(f"USE `{database}`")
            cur.execute("SET foreign_key_checks = 0, unique_checks = 0")
            for table in reversed(TABLES):
                cur.execute(f"DROP TABLE IF EXISTS {table.name}")
            for table in TABLES:
                cur.execute(table.ddl("mysql") + " ENGINE=InnoDB")
            for name, rows in generate(orders, seed).items():
                cols = TABLES_BY_NAME[name].column_names
                sql = f"INSERT INTO {name} ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})"
                batch: list[tuple] = []
                n = 0
                for row in rows:
                    batch.append(row)
                    if len(batch) >= _BATCH:
                        cur.executemany(sql, batch)  # pymysql sends one multi-row INSERT per batch
                        n += len(batch)
                        batch.clear()
                if batch:
                    cur.executemany(sql, batch)
                    n += len(batch)
                counts[name] = n
            cur.execute("SET foreign_key_checks = 1, unique_checks = 1")
        conn.commit()
    finally:
        conn.close()
    return counts


def load_duckdb(path: str, orders: int = 200_000, seed: int = 7) -> dict[str, int]:
    import os

    import duckdb

    if os.path.exists(path):
        os.unlink(path)
    conn = duckdb.connect(path)
    counts: dict[str, int] = {}
    try:
        for table in TABLES:
            conn.execute(table.ddl("duckdb"))
        for name, rows in generate(orders, seed).items():
            cols = TABLES_BY_NAME[name].column_names
            data = list(rows)
            # columnar insert through a Python relation is much faster than executemany
            import pandas as pd

            frame = pd.DataFrame.from_records(data, columns=cols)
            conn.register("incoming", frame)
            conn.execute(f"INSERT INTO {name} SELECT * FROM incoming")
            conn.unregister("incoming")
            counts[name] = len(data)
    finally:
        conn.close()
    return counts


def load(
    url: str, *, schema: str = "retail", orders: int = 200_000, seed: int = 7
) -> dict[str, int]:
    scheme = url.split(":", 1)[0].split("+", 1)[0]
    if scheme in ("postgresql", "postgres"):
        return load_postgres(url, schema, orders, seed)
    if scheme in ("mysql", "mariadb"):
        return load_mysql(url, orders, seed)
    if scheme == "duckdb":
        return load_duckdb(url.split(":///", 1)[1], orders, seed)
    if scheme == "sqlite":
        from .generate import write_sqlite

        return write_sqlite(url.split(":///", 1)[1], orders, seed)
    raise ValueError(f"unsupported URL scheme {scheme!r}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("url")
    parser.add_argument("--schema", default="retail", help="PostgreSQL schema to (re)create")
    parser.add_argument("--orders", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    counts = load(args.url, schema=args.schema, orders=args.orders, seed=args.seed)
    print(
        ", ".join(f"{k} {v:,}" for k, v in counts.items())
        + f" in {time.perf_counter() - started:.1f} s"
    )


if __name__ == "__main__":
    main()

"""What a datasource's login may do, and whether that is too much (privileged logins are refused).

A login that can read or write server files, run programs, change server
settings, see or stop other sessions is refused when its pool opens
(``SQL_DATASOURCE_PRIVILEGED``), unless the datasource is marked
``allow_privileged``: the read-only guarantee would then rest on the parser
alone. ``assay db doctor URL`` prints the same report.

- PostgreSQL: superuser (directly or through a role it can ``SET ROLE`` to),
  ``CREATEROLE`` (it can grant itself the roles below), ``REPLICATION``,
  membership in ``pg_read_server_files``, ``pg_write_server_files``,
  ``pg_execute_server_program``, ``pg_signal_backend``, or ``EXECUTE`` on a
  server-file or server-control function PUBLIC does not have.
- MySQL/MariaDB: a global (``ON *.*``) privilege in :data:`MYSQL_PRIVILEGED`
  (``ALL PRIVILEGES``, ``FILE``, ``SUPER``, ``PROCESS``, ``SHUTDOWN``,
  ``CONNECTION ADMIN`` and their split-out successors), held directly or
  through a role the login may use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .errors import SQL_DATASOURCE_PRIVILEGED, SqlError

PG_ROLES = {
    "pg_read_server_files": "reads any file the server can read (COPY FROM, pg_read_file)",
    "pg_write_server_files": "writes files on the server (COPY TO)",
    "pg_execute_server_program": "runs programs on the server (COPY ... PROGRAM)",
    "pg_signal_backend": "cancels and terminates other sessions",
}
# Functions PUBLIC may not execute by default; EXECUTE on any of them is a privilege.
PG_FUNCTIONS = (
    "pg_read_file(text)", "pg_read_file(text,bigint,bigint)", "pg_read_file(text,bigint,bigint,boolean)",
    "pg_read_binary_file(text)", "pg_ls_dir(text)", "pg_stat_file(text)", "lo_import(text)", "lo_export(oid,text)",
    "pg_reload_conf()", "pg_rotate_logfile()", "pg_promote(boolean,integer)", "pg_file_write(text,text,boolean)",
)
PG_SQL = (
    "SELECT session_user, "
    "coalesce((SELECT bool_or(r.rolsuper) FROM pg_roles r WHERE pg_has_role(session_user, r.oid, 'MEMBER')), false), "
    "coalesce((SELECT bool_or(r.rolcreaterole) FROM pg_roles r WHERE pg_has_role(session_user, r.oid, 'MEMBER')), false), "
    "coalesce((SELECT bool_or(r.rolreplication) FROM pg_roles r WHERE pg_has_role(session_user, r.oid, 'MEMBER')), false), "
    "ARRAY(SELECT r.rolname::text FROM pg_roles r WHERE r.rolname = ANY(%s) "
    "      AND pg_has_role(session_user, r.oid, 'MEMBER') ORDER BY 1), "
    "ARRAY(SELECT f FROM unnest(%s::text[]) f WHERE to_regprocedure(f) IS NOT NULL "
    "      AND has_function_privilege(session_user, to_regprocedure(f), 'EXECUTE')), "
    "(SELECT rolbypassrls FROM pg_roles WHERE rolname = session_user), "
    "(SELECT rolcreatedb FROM pg_roles WHERE rolname = session_user), "
    "current_setting('server_version')"
)
PG_HINT = (
    "Connect as a least-privilege role, e.g. as an administrator: "
    "CREATE ROLE analyst LOGIN PASSWORD '...'; GRANT CONNECT ON DATABASE mydb TO analyst; "
    "GRANT USAGE ON SCHEMA public TO analyst; GRANT SELECT ON ALL TABLES IN SCHEMA public TO analyst; "
    "then use postgresql://analyst:...@host/mydb. To accept this login knowingly, mark the datasource "
    "allow_privileged = true (config) or pass --allow-privileged (CLI); every result then says so."
)

# Global privileges that reach files, other sessions or the server itself (spaces, upper case).
MYSQL_PRIVILEGED = {
    "ALL PRIVILEGES": "every privilege, FILE and SUPER included",
    "ALL": "every privilege, FILE and SUPER included",
    "FILE": "reads and writes server files (LOAD_FILE, INTO OUTFILE)",
    "SUPER": "changes server settings, kills other sessions, ignores read_only",
    "PROCESS": "sees every session's statements",
    "SHUTDOWN": "stops the server",
    "CONNECTION ADMIN": "kills other sessions and ignores connection limits",
    "RELOAD": "flushes and reloads server state",
    "BINLOG ADMIN": "purges and controls the binary log",
    "BINLOG REPLAY": "replays binary log events",
    "REPLICATION MASTER ADMIN": "controls replication",
    "REPLICATION SLAVE ADMIN": "controls replication",
    "REPLICA ADMIN": "controls replication",
    "SLAVE ADMIN": "controls replication",
    "READ ONLY ADMIN": "writes while the server is read_only",
    "SET USER": "runs code as other users (DEFINER)",
    "FEDERATED ADMIN": "creates connections to other servers",
    "SYSTEM VARIABLES ADMIN": "changes server settings",
    "SYSTEM USER": "acts on other system accounts",
    "CREATE USER": "creates and changes logins",
}
MYSQL_HINT = (
    "Connect as a least-privilege user, e.g. as an administrator: "
    "CREATE USER 'analyst'@'%' IDENTIFIED BY '...'; GRANT SELECT ON mydb.* TO 'analyst'@'%'; "
    "then use mysql://analyst:...@host/mydb. To accept this login knowingly, mark the datasource "
    "allow_privileged = true (config) or pass --allow-privileged (CLI); every result then says so."
)
_GRANT = re.compile(r"^GRANT (.+?) ON (\S+) TO ", re.IGNORECASE | re.DOTALL)
_ROLE_GRANT = re.compile(r"^GRANT [`'\"]?([^`'\"@ ]+)[`'\"]? TO ", re.IGNORECASE)


@dataclass
class LoginReport:
    """What one login may do: the privileges that make it privileged (with why), and other facts."""

    engine: str
    login: str
    privileged: list[str] = field(default_factory=list)  # "NAME: what it allows"
    notes: list[str] = field(default_factory=list)  # what else is worth knowing (not refused)
    server: str = ""
    hint: str = ""

    @property
    def is_privileged(self) -> bool:
        return bool(self.privileged)

    def summary(self) -> str:
        return ", ".join(p.split(":", 1)[0] for p in self.privileged)

    def refusal(self, datasource: str) -> SqlError:
        return SqlError(
            SQL_DATASOURCE_PRIVILEGED,
            f"datasource {datasource!r} connects as {self.login!r}, a privileged login ({self.summary()}): "
            "such a login can reach files, other sessions or the server's settings, so it is refused",
            self.hint,
            details={"login": self.login, "privileges": self.privileged},
        )

    def render(self, *, allowed: bool) -> str:
        lines = [f"engine: {self.engine}" + (f" {self.server}" if self.server else ""), f"login: {self.login}"]
        if self.privileged:
            lines.append("privileged:")
            lines += [f"  - {p}" for p in self.privileged]
        else:
            lines.append("privileged: none (a least-privilege login)")
        if self.notes:
            lines.append("also:")
            lines += [f"  - {n}" for n in self.notes]
        if not self.privileged:
            lines.append("verdict: accepted")
        elif allowed:
            lines.append("verdict: accepted because the datasource is marked allow_privileged "
                         "(every result says privileged_login: true)")
        else:
            lines.append(f"verdict: refused ({SQL_DATASOURCE_PRIVILEGED}); mark the datasource allow_privileged "
                         "to accept it knowingly")
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)


def postgres_login_report(raw: Any) -> LoginReport:
    try:
        login, superuser, createrole, replication, roles, functions, bypassrls, createdb, version = raw.execute(
            PG_SQL, (list(PG_ROLES), list(PG_FUNCTIONS))).fetchone()
    finally:
        raw.rollback()
    report = LoginReport(engine="postgresql", login=login, server=version, hint=PG_HINT)
    if superuser:
        report.privileged.append("SUPERUSER: reads and writes server files, runs programs, changes any setting "
                                 "(directly or through a role it can SET ROLE to)")
    if createrole:
        report.privileged.append("CREATEROLE: can grant itself pg_read_server_files and the other roles below")
    if replication:
        report.privileged.append("REPLICATION: creates replication slots and streams every change")
    if not superuser:  # a superuser is a member of every role and may execute everything: said above
        report.privileged += [f"{role}: {PG_ROLES[role]}" for role in roles]
        report.privileged += [f"EXECUTE on {fn}: a server-file or server-control function" for fn in functions]
    if bypassrls and not superuser:
        report.notes.append("BYPASSRLS: row-level security policies do not apply to it")
    if createdb and not superuser:
        report.notes.append("CREATEDB (refused by the read-only session)")
    return report


def mysql_login_report(raw: Any) -> LoginReport:
    with raw.cursor() as cur:
        cur.execute("SELECT CURRENT_USER(), VERSION()")
        login, version = cur.fetchone()
        lines = _grants(cur, "SHOW GRANTS FOR CURRENT_USER()")
        roles: list[str] = []
        try:
            cur.execute("SELECT ROLE_NAME FROM information_schema.APPLICABLE_ROLES")
            roles = [r[0] for r in cur.fetchall()]
        except Exception:  # noqa: BLE001 - a server without roles
            roles = []
        seen: set[str] = set()
        while roles:
            role = roles.pop()
            if role in seen:
                continue
            seen.add(role)
            role_lines = _grants(cur, "SHOW GRANTS FOR " + _quote(role))
            lines += role_lines
            roles += [m.group(1) for line in role_lines if (m := _ROLE_GRANT.match(line)) and " ON " not in line.upper()]
    raw.rollback()
    report = LoginReport(engine="mysql", login=str(login), server=str(version), hint=MYSQL_HINT)
    found: dict[str, str] = {}
    for line in lines:
        m = _GRANT.match(line)
        if not m:
            continue
        privileges, target = m.group(1), m.group(2).replace("`", "")
        if target != "*.*":
            if target.split(".", 1)[0].lower() == "mysql":
                report.notes.append(f"privileges on the mysql schema: {privileges}")
            continue
        for privilege in _split(privileges):
            name = re.sub(r"[\s_]+", " ", privilege.strip().upper())
            if name in MYSQL_PRIVILEGED:
                found.setdefault(name, MYSQL_PRIVILEGED[name])
    report.privileged = [f"{name}: {why}" for name, why in found.items()]
    if seen:
        report.notes.append(f"roles it may use: {', '.join(sorted(seen))}")
    return report


def _grants(cur: Any, statement: str) -> list[str]:
    cur.execute(statement)
    return [str(r[0]) for r in cur.fetchall()]


def _quote(role: str) -> str:
    return "`" + role.replace("`", "``") + "`"


def _split(privileges: str) -> list[str]:
    """``SELECT, INSERT (a, b), FILE`` -> the privileges (column lists stay with theirs)."""
    out, depth, current = [], 0, ""
    for ch in privileges:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += ch
    out.append(current)
    return [re.sub(r"\(.*\)", "", p).strip() for p in out if p.strip()]

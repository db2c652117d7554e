"""What a datasource's login may do, and whether that is too much (privileged logins are refused).

A login that can read or write server files, run programs, change server
settings, see or stop other sessions is refused when its pool opens
(``SQL_DATASOURCE_PRIVILEGED``), unless the datasource is marked
``allow_privileged``: the read-only guarantee would then rest on the parser
alone. ``assay db doctor URL`` prints the same report.

- PostgreSQL: superuser (directly or through a role it can ``SET ROLE`` to),
  ``CREATEROLE`` (it can grant itself the roles below), ``REPLICATION``,
  membership in ``pg_read_server_files``, ``pg_write_server_files``,
  ``pg_execute_server_program``, ``pg_signal_backend``, ``pg_read_all_stats``
  or ``pg_monitor`` (every session's SQL text), ``pg_write_all_data``, or
  ``EXECUTE`` on a server-file or server-control function PUBLIC does not have.
- MySQL/MariaDB: a global (``ON *.*``) privilege in :data:`MYSQL_PRIVILEGED`
  (``ALL PRIVILEGES``, ``FILE``, ``SUPER``, ``PROCESS``, ``SHUTDOWN``,
  ``CONNECTION ADMIN`` and their split-out successors), held directly or
  through a role the login may use (a role it has not enabled included: its
  grants are read with ``SET ROLE`` and the session's role is put back; a role
  whose grants cannot be read is refused).

The report also says whether the session settings the read-only check reads
SQL by are as it reads them (PostgreSQL ``standard_conforming_strings`` on;
MariaDB/MySQL ``sql_mode`` without ``ANSI_QUOTES`` / ``NO_BACKSLASH_ESCAPES``),
and where a login default differs; on PostgreSQL, whether a
``temp_file_limit`` bounds the login's temporary files.
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
    "pg_read_all_stats": "sees every session's SQL text and statistics (pg_stat_activity)",
    "pg_monitor": "sees every session's SQL text (it holds pg_read_all_stats) and server settings",
    "pg_write_all_data": "may write every table (only the read-only session stops it)",
}
# Functions PUBLIC may not execute by default; EXECUTE on any of them is a privilege.
PG_FUNCTIONS = (
    "pg_read_file(text)",
    "pg_read_file(text,bigint,bigint)",
    "pg_read_file(text,bigint,bigint,boolean)",
    "pg_read_binary_file(text)",
    "pg_ls_dir(text)",
    "pg_stat_file(text)",
    "lo_import(text)",
    "lo_export(oid,text)",
    "pg_reload_conf()",
    "pg_rotate_logfile()",
    "pg_promote(boolean,integer)",
    "pg_file_write(text,text,boolean)",
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
    "current_setting('server_version'), "
    # the settings the read-only check reads SQL by, and the temporary-file bound: the session's value,
    # the value at login and where it came from, and the role's/database's own defaults
    "current_setting('standard_conforming_strings'), "
    "(SELECT reset_val || ' (' || source || ')' FROM pg_settings WHERE name = 'standard_conforming_strings'), "
    "(SELECT reset_val::bigint FROM pg_settings WHERE name = 'temp_file_limit'), "
    "ARRAY(SELECT CASE WHEN s.setrole = 0 THEN 'database default' WHEN s.setdatabase = 0 THEN 'role default' "
    "      ELSE 'role default in this database' END || ': ' || c "
    "      FROM pg_db_role_setting s, unnest(s.setconfig) c "
    "      WHERE s.setrole IN (0, (SELECT oid FROM pg_roles WHERE rolname = session_user)) "
    "      AND s.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database())) "
    "      AND (c LIKE 'standard_conforming_strings=%%' OR c LIKE 'temp_file_limit=%%') ORDER BY 1), "
    "EXISTS (SELECT 1 FROM pg_class c WHERE c.relkind IN ('r', 'p', 'f') "
    "        AND c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace) "
    "        AND has_table_privilege(session_user, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')), "
    "current_setting('server_version_num')::int"
)
# PostgreSQL 15+: SET on a superuser-only parameter may be granted (GRANT SET ON PARAMETER).
PG_CAN_SET_SQL = "SELECT has_parameter_privilege(session_user, 'temp_file_limit', 'SET')"
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


# sql_mode flags under which MariaDB/MySQL read quotes and backslashes otherwise than the read-only check.
MYSQL_MODE_FLAGS = {
    "ANSI_QUOTES": 'reads "..." as an identifier, not a string',
    "NO_BACKSLASH_ESCAPES": "reads a backslash in a string as a plain character",
}


@dataclass
class LoginReport:
    """What one login may do: the privileges that make it privileged (with why), and other facts."""

    engine: str
    login: str
    privileged: list[str] = field(default_factory=list)  # "NAME: what it allows"
    notes: list[str] = field(default_factory=list)  # what else is worth knowing (not refused)
    server: str = ""
    hint: str = ""
    writes: bool = (
        False  # it holds write privileges (the read-only session refuses them): not least-privilege
    )
    settings: list[str] = field(
        default_factory=list
    )  # "name: value (where from): ok" / "...: WARNING ..."
    advice: list[str] = field(default_factory=list)  # what an administrator should do
    # PostgreSQL: temp_file_limit at login, in kB (-1: none), and whether the login may set it itself
    temp_file_limit_kb: int | None = None
    can_set_temp_file_limit: bool = False

    def advise_temp_file_limit(self, limit_mb: int) -> None:
        """Say how the login's temporary files are bounded (``limit_mb``: the configured bound, 0 = none)."""
        if self.temp_file_limit_kb is None or not limit_mb:
            return
        current = (
            "none" if self.temp_file_limit_kb < 0 else f"{self.temp_file_limit_kb // 1024:,} MB"
        )
        if self.can_set_temp_file_limit:
            self.settings.append(
                f"temp_file_limit: {current} at login; assay sets {limit_mb:,} MB for each "
                "statement (the login may set it): ok"
            )
        elif 0 <= self.temp_file_limit_kb <= limit_mb * 1024:
            self.settings.append(f"temp_file_limit: {current} (the login's own bound): ok")
        else:
            self.settings.append(
                f"temp_file_limit: {current}: WARNING a sort or hash may write unbounded temporary "
                "files, and only a superuser (or GRANT SET ON PARAMETER) may set it"
            )
            self.advice.append(
                f"as an administrator: ALTER ROLE {_pg_ident(self.login)} SET temp_file_limit = "
                f"'{limit_mb}MB';"
            )

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
            # privileged_login: the fact about the login (true), beside the privileges that make it so
            details={
                "login": self.login,
                "privileges": self.privileged,
                "privileged_login": True,
                "allowed": False,
            },
        )

    def render(self, *, allowed: bool) -> str:
        lines = [
            f"engine: {self.engine}" + (f" {self.server}" if self.server else ""),
            f"login: {self.login}",
        ]
        if self.privileged:
            lines.append("privileged:")
            lines += [f"  - {p}" for p in self.privileged]
        elif self.writes:
            lines.append(
                "privileged: none (not least-privilege: it may write, which the read-only session refuses)"
            )
        else:
            lines.append("privileged: none (a least-privilege login)")
        if self.notes:
            lines.append("also:")
            lines += [f"  - {n}" for n in self.notes]
        if self.settings:
            lines.append("settings:")
            lines += [f"  - {n}" for n in self.settings]
        if self.advice:
            lines.append("advice:")
            lines += [f"  - {n}" for n in self.advice]
        if not self.privileged:
            lines.append("verdict: accepted")
        elif allowed:
            lines.append(
                "verdict: accepted because the datasource is marked allow_privileged "
                "(every result says privileged_login: true)"
            )
        else:
            lines.append(
                f"verdict: refused ({SQL_DATASOURCE_PRIVILEGED}); mark the datasource allow_privileged "
                "to accept it knowingly"
            )
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)


def postgres_login_report(raw: Any) -> LoginReport:
    try:
        (
            login,
            superuser,
            createrole,
            replication,
            roles,
            functions,
            bypassrls,
            createdb,
            version,
            scs,
            scs_at_login,
            temp_kb,
            defaults,
            writes,
            version_num,
        ) = raw.execute(PG_SQL, (list(PG_ROLES), list(PG_FUNCTIONS))).fetchone()
        can_set_temp = bool(superuser) or (
            version_num >= 150000 and bool(raw.execute(PG_CAN_SET_SQL).fetchone()[0])
        )
    finally:
        raw.rollback()
    report = LoginReport(
        engine="postgresql",
        login=login,
        server=version,
        hint=PG_HINT,
        writes=bool(writes),
        temp_file_limit_kb=int(temp_kb),
        can_set_temp_file_limit=can_set_temp,
    )
    _pg_settings(report, scs, scs_at_login, defaults)
    if superuser:
        report.privileged.append(
            "SUPERUSER: reads and writes server files, runs programs, changes any setting "
            "(directly or through a role it can SET ROLE to)"
        )
    if createrole:
        report.privileged.append(
            "CREATEROLE: can grant itself pg_read_server_files and the other roles below"
        )
    if replication:
        report.privileged.append("REPLICATION: creates replication slots and streams every change")
    if (
        not superuser
    ):  # a superuser is a member of every role and may execute everything: said above
        report.privileged += [f"{role}: {PG_ROLES[role]}" for role in roles]
        report.privileged += [
            f"EXECUTE on {fn}: a server-file or server-control function" for fn in functions
        ]
    if bypassrls and not superuser:
        report.notes.append("BYPASSRLS: row-level security policies do not apply to it")
    if createdb and not superuser:
        report.notes.append("CREATEDB (refused by the read-only session)")
    if writes and not superuser:
        report.notes.append(
            "INSERT/UPDATE/DELETE/TRUNCATE on some tables (refused by the read-only session)"
        )
    return report


def _pg_settings(report: LoginReport, scs: str, at_login: str, defaults: list[str]) -> None:
    off = [d for d in defaults if d.lower().endswith("standard_conforming_strings=off")]
    where = f"; {', '.join(off)}" if off else ""
    if scs == "on" and not at_login.startswith("off") and not off:
        report.settings.append(f"standard_conforming_strings: on (at login: {at_login}): ok")
        return
    report.settings.append(
        f"standard_conforming_strings: {scs} in this session (at login: {at_login}{where}): WARNING with it off "
        "the server reads a backslash in '...' as an escape, which the read-only check does not; "
        "every assay session must set it on"
    )
    report.advice.append(
        f"as an administrator: ALTER ROLE {_pg_ident(report.login)} SET standard_conforming_strings "
        "= on; (and ALTER DATABASE ... SET, if the database default is off)"
    )


def _pg_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def mysql_login_report(raw: Any) -> LoginReport:
    with raw.cursor() as cur:
        cur.execute("SELECT CURRENT_USER(), VERSION(), @@global.sql_mode, @@session.sql_mode")
        login, version, global_mode, session_mode = cur.fetchone()
        lines = _grants(cur, "SHOW GRANTS FOR CURRENT_USER()")
        roles: list[str] = []
        try:
            cur.execute("SELECT ROLE_NAME FROM information_schema.APPLICABLE_ROLES")
            roles = [r[0] for r in cur.fetchall()]
        except Exception:  # noqa: BLE001 - a server without roles
            roles = []
        seen: set[str] = set()
        unreadable: dict[str, str] = {}
        while roles:
            role = roles.pop()
            if role in seen:
                continue
            seen.add(role)
            try:
                role_lines = _role_grants(cur, role)
            except Exception as exc:  # noqa: BLE001 - what a role may do is not known: refused below
                unreadable[role] = _mysql_message(exc)
                continue
            lines += role_lines
            roles += [
                m.group(1)
                for line in role_lines
                if (m := _ROLE_GRANT.match(line)) and " ON " not in line.upper()
            ]
    raw.rollback()
    report = LoginReport(engine="mysql", login=str(login), server=str(version), hint=MYSQL_HINT)
    found: dict[str, str] = {}
    for line in lines:
        m = _GRANT.match(line)
        if not m:
            continue
        privileges, target = m.group(1), m.group(2).replace("`", "")
        names = [re.sub(r"[\s_]+", " ", p.strip().upper()) for p in _split(privileges)]
        if any(n in MYSQL_WRITES for n in names):
            report.writes = True
        if target != "*.*":
            if target.split(".", 1)[0].lower() == "mysql":
                report.notes.append(f"privileges on the mysql schema: {privileges}")
            continue
        for name in names:
            if name in MYSQL_PRIVILEGED:
                found.setdefault(name, MYSQL_PRIVILEGED[name])
    report.privileged = [f"{name}: {why}" for name, why in found.items()]
    report.privileged += [
        f"ROLE {role}: a role it may use whose grants could not be read ({why})"
        for role, why in sorted(unreadable.items())
    ]
    if seen:
        report.notes.append(f"roles it may use: {', '.join(sorted(seen))}")
    if report.writes:
        report.notes.append(
            "write privileges (INSERT, UPDATE, DELETE, CREATE...; refused by the read-only session)"
        )
    _mysql_settings(report, str(global_mode or ""), str(session_mode or ""))
    return report


# Privileges that write data or change objects (refused by the read-only session, but not least-privilege).
MYSQL_WRITES = frozenset(
    {
        "INSERT",
        "UPDATE",
        "DELETE",
        "CREATE",
        "DROP",
        "ALTER",
        "INDEX",
        "CREATE VIEW",
        "CREATE ROUTINE",
        "ALTER ROUTINE",
        "TRIGGER",
        "EVENT",
        "CREATE TEMPORARY TABLES",
        "LOCK TABLES",
        "DELETE HISTORY",
        "REFERENCES",
        "ALL",
        "ALL PRIVILEGES",
    }
)


def _role_grants(cur: Any, role: str) -> list[str]:
    """The grants of ``role``. MariaDB shows a role's grants only while it is enabled: a role the login may
    use but has not enabled (not its default role) is enabled for the question, then the session's own role
    is put back."""
    try:
        return _grants(cur, "SHOW GRANTS FOR " + _quote(role))
    except Exception as exc:  # noqa: BLE001 - 1044/1227: not enabled in this session
        if not (getattr(exc, "args", None) and exc.args[0] in (1044, 1227)):
            raise
    cur.execute("SELECT CURRENT_ROLE()")
    (current,) = cur.fetchone()
    cur.execute("SET ROLE " + _quote(role))
    try:
        return _grants(cur, "SHOW GRANTS FOR " + _quote(role))
    finally:
        cur.execute("SET ROLE NONE" if current is None else "SET ROLE " + _quote(current))


def _mysql_message(exc: BaseException) -> str:
    args = exc.args
    return f"({args[0]}) {args[1]}" if len(args) == 2 else f"{type(exc).__name__}: {exc}"


def _mysql_settings(report: LoginReport, global_mode: str, session_mode: str) -> None:
    """The session's sql_mode is the one assay pins (the server's without the flags below, whatever the
    URL's init_command asked for): a flag still in the session is a failed pin; one in the server's mode
    only is taken out of every assay session (said, so that the operator knows other clients read it)."""
    for flag, why in MYSQL_MODE_FLAGS.items():
        if flag in session_mode.upper().split(","):
            report.settings.append(
                f"sql_mode holds {flag} (this session): WARNING the server then {why}, "
                "which the read-only check does not; assay's sessions must not hold it"
            )
            report.advice.append(f"take {flag} out of the datasource URL's init_command / sql_mode")
        elif flag in global_mode.upper().split(","):
            report.settings.append(
                f"sql_mode without {flag}: ok (the server's sql_mode holds it; assay takes "
                "it out of every session it opens)"
            )
        else:
            report.settings.append(f"sql_mode without {flag}: ok")


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

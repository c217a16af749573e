#!/usr/bin/env python3
"""Check a mixseek.db with the ORIGINAL mixseek-core's own reader (AggregationStore) and models.

Usage:
    venv/bin/python check_db.py PATH/TO/mixseek.db [--in-place] [--strict] [--roundtrip] [--quiet] [--json OUT]

Part of mixseek's test tier against the original (scripts/original-tests, workspace-tests/tests/original.rs).

What it does
  * Opens the database through mixseek.storage.AggregationStore(db_path=...).
    AggregationStore.__init__ ALWAYS connects read-write and runs CREATE SEQUENCE/TABLE/INDEX IF NOT EXISTS
    (mixseek/storage/aggregation_store.py::_init_tables_sync + storage/schema.ALL_SCHEMA_DDL). To leave the
    given file untouched, this script by default copies the file (and a `.wal` next to it, if any) into a
    temporary directory and opens the copy. --in-place opens the given file directly (it may then be
    modified: missing tables/indexes/sequences get created, the WAL may be checkpointed).
    The sha256 of the original file is compared before/after and reported.
  * Enumerates execution ids / teams / rounds with plain SELECTs on the store's own connection
    (AggregationStore has no API that lists them).
  * Reads through the original API (all async, awaited here):
        get_leader_board(limit)                       -> pandas DataFrame (all executions)
        get_leader_board_ranking(execution_id)        -> list[dict] per execution
        load_round_history(execution_id, team_id, round_number) -> (MemberSubmissionsRecord|None, list[ModelMessage])
        get_team_statistics(team_id)                  -> dict per team
  * Validates, naming table / row / field on failure:
        round_history.message_history      with ModelMessagesTypeAdapter.validate_json (raw text) and validate_python
        round_history.member_submissions_record with MemberSubmissionsRecord.model_validate_json
        ...submissions[i].all_messages     with ModelMessagesTypeAdapter.validate_python
        leader_board.score_details, execution_summary.team_results: must be JSON (json.loads)
  * --roundtrip: re-serialises every validated value the way the original writes it
    (to_jsonable_python / model_dump(mode="json")) and reports keys that the stored JSON has but that
    pydantic silently dropped (unknown / misspelled keys are IGNORED by validation!), and values that changed
    (timestamps are compared as instants). These are warnings; --strict makes warnings fatal.
  * --json OUT: writes what the original's readers returned (rankings per execution, team statistics, per
    round the number of submissions and messages load_round_history gave) as JSON, for the caller to compare.

Exit status: 0 = all good, 1 = validation/read failure (or warnings with --strict), 2 = usage / open error.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any


def sha256(path: Path) -> str | None:
    if not path.exists():
        return None
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Report:
    def __init__(self, quiet: bool) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.quiet = quiet

    def error(self, where: str, msg: str) -> None:
        self.errors.append(f"ERROR {where}: {msg}")
        print(self.errors[-1], file=sys.stderr)

    def warn(self, where: str, msg: str) -> None:
        self.warnings.append(f"WARN  {where}: {msg}")
        print(self.warnings[-1], file=sys.stderr)

    def info(self, msg: str) -> None:
        if not self.quiet:
            print(msg)


def short_err(e: Exception, limit: int = 1500) -> str:
    s = str(e)
    return s if len(s) <= limit else s[:limit] + " ...[truncated]"


def _as_instant(v: Any) -> datetime | None:
    if not isinstance(v, str) or len(v) < 10 or v[4:5] != "-":
        return None
    try:
        return datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None


def diff_json(stored: Any, redumped: Any, path: str, out: list[str]) -> None:
    """Report keys dropped by validation and changed values (stored -> re-dumped)."""
    if isinstance(stored, dict) and isinstance(redumped, dict):
        for k, v in stored.items():
            if k not in redumped:
                out.append(f"{path}.{k}: key not known to the model (dropped on validation)")
            else:
                diff_json(v, redumped[k], f"{path}.{k}", out)
        return
    if isinstance(stored, list) and isinstance(redumped, list):
        if len(stored) != len(redumped):
            out.append(f"{path}: list length {len(stored)} -> {len(redumped)}")
        for i, (a, b) in enumerate(zip(stored, redumped)):
            diff_json(a, b, f"{path}[{i}]", out)
        return
    if stored == redumped:
        return
    if isinstance(stored, (int, float)) and isinstance(redumped, (int, float)) and not isinstance(stored, bool) \
            and float(stored) == float(redumped):
        return
    a, b = _as_instant(stored), _as_instant(redumped)
    if a is not None and b is not None:
        if (a.tzinfo is None) == (b.tzinfo is None) and a == b:
            return
    out.append(f"{path}: value {json.dumps(stored, ensure_ascii=False)[:120]} -> "
               f"{json.dumps(redumped, ensure_ascii=False)[:120]}")


async def check(db: Path, args: argparse.Namespace, rep: Report, found: dict) -> None:
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_core import to_jsonable_python

    from mixseek.agents.leader.models import MemberSubmissionsRecord
    from mixseek.storage import AggregationStore

    store = AggregationStore(db_path=db)
    conn = store._get_connection()  # the store's own (thread-local) connection; only for enumeration

    # ---------------- enumeration (no API for this) ----------------
    tables = {r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}
    rep.info(f"tables: {sorted(tables)}")
    counts = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0]
              for t in ("round_history", "leader_board", "round_status", "execution_summary") if t in tables}
    rep.info(f"row counts: {counts}")
    exec_ids = [r[0] for r in conn.execute(
        "SELECT execution_id FROM round_history UNION SELECT execution_id FROM leader_board "
        "UNION SELECT execution_id FROM round_status UNION SELECT execution_id FROM execution_summary "
        "ORDER BY 1").fetchall()]
    team_ids = [r[0] for r in conn.execute(
        "SELECT team_id FROM round_history UNION SELECT team_id FROM leader_board "
        "UNION SELECT team_id FROM round_status ORDER BY 1").fetchall()]
    rh_rows = conn.execute(
        "SELECT id, execution_id, team_id, round_number, message_history, member_submissions_record "
        "FROM round_history ORDER BY execution_id, team_id, round_number").fetchall()
    rep.info(f"executions: {exec_ids}")
    rep.info(f"teams: {team_ids}")
    if not rh_rows:
        rep.warn("round_history", "table is empty")

    # ---------------- API reads ----------------
    try:
        lb = await store.get_leader_board(limit=1_000_000)
        rep.info(f"\n== get_leader_board(limit=1000000): {len(lb)} rows ==")
        if not rep.quiet and len(lb):
            with __import__("pandas").option_context("display.width", 200, "display.max_colwidth", 60):
                print(lb.drop(columns=["score_details"]).to_string(index=False))
    except Exception as e:
        rep.error("leader_board (AggregationStore.get_leader_board)", short_err(e))

    for ex in exec_ids:
        try:
            ranking = await store.get_leader_board_ranking(ex)
            found.setdefault("rankings", {})[ex] = [
                {"team_id": r["team_id"], "team_name": r["team_name"], "max_score": float(r["max_score"]),
                 "total_rounds": int(r["total_rounds"])} for r in ranking]
            rep.info(f"\n== get_leader_board_ranking({ex!r}) ==")
            for i, r in enumerate(ranking, 1):
                rep.info(f"  {i}. {r['team_id']} ({r['team_name']}): max_score={r['max_score']} "
                         f"total_rounds={r['total_rounds']}")
        except Exception as e:
            rep.error(f"leader_board execution_id={ex} (get_leader_board_ranking)", short_err(e))

    rep.info("\n== get_team_statistics(team_id) ==")
    for t in team_ids:
        try:
            st = await store.get_team_statistics(t)
            found.setdefault("team_statistics", {})[t] = {k: (float(v) if isinstance(v, float) else v)
                                                         for k, v in st.items()}
            rep.info(f"  {t}: {st}")
        except Exception as e:
            rep.error(f"leader_board team_id={t} (get_team_statistics)", short_err(e))

    # ---------------- round_history validation ----------------
    rep.info("\n== round_history ==")
    n_msgs = n_subs = n_sub_msgs = 0
    for rid, ex, team, rnd, mh_raw, msr_raw in rh_rows:
        where = f"round_history row id={rid} (execution_id={ex}, team_id={team}, round_number={rnd})"
        # message_history
        if mh_raw is None:
            rep.warn(f"{where} field message_history", "is NULL (original loader returns [])")
        else:
            try:
                mh_json = json.loads(mh_raw)
            except Exception as e:
                rep.error(f"{where} field message_history", f"not valid JSON: {short_err(e)}")
                mh_json = None
            if mh_json is not None:
                if not isinstance(mh_json, list):
                    rep.error(f"{where} field message_history", f"top-level JSON is {type(mh_json).__name__}, not a list")
                try:
                    msgs = ModelMessagesTypeAdapter.validate_json(mh_raw)
                    ModelMessagesTypeAdapter.validate_python(mh_json)
                    n_msgs += len(msgs)
                    if args.roundtrip:
                        d: list[str] = []
                        diff_json(mh_json, to_jsonable_python(msgs), "message_history", d)
                        for x in d:
                            rep.warn(where, f"roundtrip {x}")
                except Exception as e:
                    rep.error(f"{where} field message_history", f"ModelMessagesTypeAdapter rejected it: {short_err(e)}")

        # member_submissions_record
        if msr_raw is None:
            rep.warn(f"{where} field member_submissions_record", "is NULL (original loader returns None)")
        else:
            try:
                msr_json = json.loads(msr_raw)
            except Exception as e:
                rep.error(f"{where} field member_submissions_record", f"not valid JSON: {short_err(e)}")
                msr_json = None
            if msr_json is not None:
                try:
                    rec = MemberSubmissionsRecord.model_validate_json(msr_raw)
                    n_subs += len(rec.submissions)
                    for key, val in (("execution_id", ex), ("team_id", team), ("round_number", rnd)):
                        if getattr(rec, key) != val:
                            rep.warn(f"{where} field member_submissions_record.{key}",
                                     f"{getattr(rec, key)!r} differs from the row's column value {val!r}")
                    if args.roundtrip:
                        d = []
                        diff_json(msr_json, rec.model_dump(mode="json"), "member_submissions_record", d)
                        for x in d:
                            rep.warn(where, f"roundtrip {x}")
                except Exception as e:
                    rep.error(f"{where} field member_submissions_record",
                              f"MemberSubmissionsRecord rejected it: {short_err(e)}")
                subs = msr_json.get("submissions", []) if isinstance(msr_json, dict) else []
                for i, sub in enumerate(subs if isinstance(subs, list) else []):
                    am = sub.get("all_messages") if isinstance(sub, dict) else None
                    if am is None:
                        continue
                    try:
                        n_sub_msgs += len(ModelMessagesTypeAdapter.validate_python(am))
                        ModelMessagesTypeAdapter.validate_json(json.dumps(am))
                    except Exception as e:
                        rep.error(f"{where} field member_submissions_record.submissions[{i}].all_messages "
                                  f"(agent_name={sub.get('agent_name')!r})",
                                  f"ModelMessagesTypeAdapter rejected it: {short_err(e)}")

        # the original loader itself
        try:
            rec2, msgs2 = await store.load_round_history(ex, team, rnd)
            found.setdefault("rounds", []).append({
                "execution_id": ex, "team_id": team, "round_number": rnd,
                "submissions": None if rec2 is None else rec2.total_count, "messages": len(msgs2)})
            rep.info(f"  load_round_history({ex!r}, {team!r}, {rnd}) -> "
                     f"{'None' if rec2 is None else f'{rec2.total_count} submission(s)'}, {len(msgs2)} message(s)")
        except Exception as e:
            rep.error(f"{where} (AggregationStore.load_round_history)", short_err(e))

    # ---------------- other JSON columns ----------------
    for table, key_cols, col in (("leader_board", "id, execution_id, team_id, round_number", "score_details"),
                                 ("execution_summary", "execution_id", "team_results")):
        if table not in tables:
            rep.error(table, "table missing")
            continue
        for row in conn.execute(f"SELECT {key_cols}, {col} FROM {table}").fetchall():
            *keys, val = row
            try:
                json.loads(val) if val is not None else None
            except Exception as e:
                rep.error(f"{table} row ({key_cols})={tuple(keys)} field {col}", f"not valid JSON: {short_err(e)}")

    rep.info(f"\nvalidated: {len(rh_rows)} round_history row(s), {n_msgs} leader message(s), "
             f"{n_subs} member submission(s), {n_sub_msgs} member message(s)")
    conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db", type=Path, help="path to a mixseek.db")
    ap.add_argument("--in-place", action="store_true", help="open the given file itself (may modify it)")
    ap.add_argument("--strict", action="store_true", help="treat warnings as failures")
    ap.add_argument("--roundtrip", action="store_true", help="report keys/values changed by validate+re-dump")
    ap.add_argument("--quiet", action="store_true", help="only print problems and the final verdict")
    ap.add_argument("--json", type=Path, help="write what the original's readers returned to this file")
    args = ap.parse_args()

    src: Path = args.db
    if not src.is_file():
        print(f"ERROR: {src}: no such file", file=sys.stderr)
        return 2
    wal = src.with_name(src.name + ".wal")
    before = (sha256(src), sha256(wal))

    rep = Report(args.quiet)
    found: dict = {}
    tmp = None
    try:
        if args.in_place:
            db = src
        else:
            tmp = tempfile.mkdtemp(prefix="check_db_")
            db = Path(tmp) / src.name
            shutil.copy2(src, db)
            if wal.exists():
                shutil.copy2(wal, Path(tmp) / wal.name)
        try:
            asyncio.run(check(db, args, rep, found))
        except Exception as e:  # open failures etc.
            rep.error(f"{src} (AggregationStore open / read)", f"{type(e).__name__}: {short_err(e)}")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)

    after = (sha256(src), sha256(wal))
    rep.info(f"\nsource file {'unchanged' if before == after else 'CHANGED'} "
             f"(sha256 {str(before[0])[:12]} -> {str(after[0])[:12]}; mode={'in-place' if args.in_place else 'copy'})")
    if before != after:
        rep.error(str(src), "the file changed while it was checked")
    if args.json:
        found["errors"], found["warnings"] = rep.errors, rep.warnings
        args.json.write_text(json.dumps(found, ensure_ascii=False, indent=2))
    fail = bool(rep.errors) or (args.strict and bool(rep.warnings))
    print(f"{'FAIL' if fail else 'OK'}: {len(rep.errors)} error(s), {len(rep.warnings)} warning(s) in {src}",
          file=sys.stderr if fail else sys.stdout)
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())

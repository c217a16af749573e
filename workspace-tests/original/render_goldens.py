"""Renders the golden prompt cases of crates/mixseek-prompt/src/golden_tests.rs with the original's own
UserPromptBuilder (mixseek-core, default templates, clock fixed at 2025-11-25T14:30:00+09:00), prints each
render's size and SHA-256 and writes the renders as JSON to the file given as the first argument (default
/tmp/gold/out.json). Part of the original tier (workspace-tests/tests/original.rs)."""
import asyncio, hashlib, json, sys
from datetime import datetime, timezone
import mixseek.prompt_builder.builder as B
from mixseek.prompt_builder import UserPromptBuilder
from mixseek.prompt_builder.models import RoundPromptContext, EvaluatorPromptContext
from mixseek.config.schema import PromptBuilderSettings
from mixseek.round_controller.models import RoundState
B.get_current_datetime_with_timezone = lambda: "2025-11-25T14:30:00+09:00"

class Store:
    def __init__(self, rows): self.rows = rows
    async def get_leader_board_ranking(self, eid): return self.rows

def hist(content, score, details):
    t = datetime(2025,11,25,5,0,tzinfo=timezone.utc)
    return [RoundState(round_number=1, submission_content=content, evaluation_score=score, score_details=details,
                       round_started_at=t, round_ended_at=t)]
def team(tid, name, s): return {"team_id": tid, "team_name": name, "max_score": s, "total_rounds": 1}
three = [team("team-A","Team Alpha",95.0), team("team-B","Team Beta",85.0), team("team-C","Team Gamma",75.0)]
b = UserPromptBuilder(PromptBuilderSettings())
def ctx(prompt, rnd, history=(), store=None, tid="team1", name="Alpha"):
    return RoundPromptContext(user_prompt=prompt, round_number=rnd, round_history=list(history), team_id=tid,
                              team_name=name, execution_id="exec-1", store=store)
async def main():
    out = {}
    out["a"] = await b.build_team_prompt(ctx("データ分析タスク", 1))
    out["b"] = await b.build_team_prompt(ctx("データ分析タスク", 2, hist("First submission", 75.5, {})))
    out["c"] = await b.build_team_prompt(ctx("データ分析タスク", 2, hist("First submission", 85.5, {}),
        Store([{"team_id":"team1","team_name":"Alpha","max_score":85.5,"total_rounds":1},{"team_id":"team2","team_name":"Beta","max_score":80.0,"total_rounds":1}])))
    out["d"] = await b.build_judgment_prompt(ctx("Test task", 2, hist("Initial submission", 75.5, {"accuracy": 80.0, "completeness": 71.0})))
    out["e"] = b.build_evaluator_prompt(EvaluatorPromptContext(user_query="What is Python?", submission="Python is a programming language..."))
    out["h"] = await b.build_team_prompt(ctx("タスク", 2, hist("First submission", 75.5, {}), Store(three), tid="team-X"))
    out["i"] = await b.build_team_prompt(ctx("タスク", 2, hist("First submission", 75.5, {}), Store([])))
    out["j"] = await b.build_team_prompt(ctx("タスク", 1, (), Store(three), tid="team-A"))
    out["j_judgment"] = await b.build_judgment_prompt(ctx("タスク", 1, (), Store(three), tid="team-A"))
    for k, v in out.items():
        print(k, len(v), len(v.encode()), hashlib.sha256(v.encode()).hexdigest())
    path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/gold/out.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
asyncio.run(main())

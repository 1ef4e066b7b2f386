"""A LangGraph RAG graph captured with node metrics, against the loopback OpenAI-compatible server (no key).

The retriever node carries the retrieval-quality group (ids against the state's ``ground_truth_contexts``) and the
generator node faithfulness and answer relevance; the graph's invoke is one message, scored with ``token_f1``.
Prints the run's results, then the same node metrics computed again from the store with ``compute``.
``python scripts/demo_rag_langgraph.py --store /tmp/rag.duckdb``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TypedDict

REPO = Path(__file__).resolve().parents[1]
DOCS = {"d1": "Paris is the capital of France.", "d2": "France is in Europe.", "d3": "Rome is the capital of Italy.",
        "d4": "Italy is in Europe."}
TASKS = [("fr", "What is the capital of France?", "Paris", ["d1"]),
         ("it", "What is the capital of Italy?", "Rome", ["d3"])]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="reports/demo-rag/agentstats.duckdb", help="store file (recreated)")
    args = ap.parse_args(argv)
    store = Path(args.store)
    store.parent.mkdir(parents=True, exist_ok=True)
    store.unlink(missing_ok=True)
    sys.path.insert(0, str(REPO / "tests"))
    import openai
    from judge_server import Reply, ScriptedOpenAIServer, user_text
    from langgraph.graph import END, START, StateGraph

    import agentstats as ast
    from agentstats.metrics import compute

    def reply(req):  # the stand-in model answers from the first passage it is given
        text = user_text(req)
        return Reply.text("Paris is the capital." if "Paris" in text else "The capital is Rome, I think.")

    class State(TypedDict, total=False):
        task_id: str
        query: str
        expected_answer: str
        ground_truth_contexts: list[str]
        doc_ids: list[str]
        context: list[str]
        answer: str

    with ScriptedOpenAIServer(responder=reply) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="loopback")

        @ast.node("retriever", metrics=["retrieval_quality"], fields={"retrieved_ids": "doc_ids"})
        def retrieve(state: State) -> State:
            words = set(state["query"].lower().rstrip("?").split())
            ranked = sorted(DOCS, key=lambda d: -len(words & set(DOCS[d].lower().rstrip(".").split())))[:2]
            return {"doc_ids": ranked, "context": [DOCS[d] for d in ranked]}

        @ast.node("generator", metrics=["faithfulness", "answer_relevance"])
        def generate(state: State) -> State:
            r = client.chat.completions.create(model="gpt-4o-mini", messages=[
                {"role": "user", "content": f"{state['context'][0]}\n{state['query']}"}])
            return {"answer": r.choices[0].message.content}

        g = StateGraph(State)
        g.add_node("retriever", retrieve)
        g.add_node("generator", generate)
        g.add_edge(START, "retriever")
        g.add_edge("retriever", "generator")
        g.add_edge("generator", END)
        graph = g.compile()

        @ast.node("rag")
        def app(state: State) -> State:
            return graph.invoke(state)

        with ast.run("rag-demo", store=store, metrics=["token_f1"]) as run:
            for task, q, a, gt in TASKS:
                app({"task_id": task, "query": q, "expected_answer": a, "ground_truth_contexts": gt})
    print(run.result().to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    past = ast.open_run("rag-demo", store=store)
    frame = compute(ast.load_trials(store, run="rag-demo"), ["faithfulness", "hit_rate", "reciprocal_rank"],
                    level="node")
    own = {"faithfulness": "generator", "hit_rate": "retriever", "reciprocal_rank": "retriever"}
    frame = frame[frame["applicable"] & (frame["node"] == frame["metric"].map(own))]
    print("\nfrom the store (compute(load_trials(store, run=...), ..., level='node')):")
    print(frame[["task_id", "node", "metric", "value"]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\nopen_run: {past!r}")


if __name__ == "__main__":
    main()

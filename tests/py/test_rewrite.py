"""apply_patterns / Rewriter bookkeeping: inserted ops land right before their anchor,
names stay unique, erased anchors vanish, and foreign edits of `graph.ops` are survived;
pattern_pass derives a pass from its pattern."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from convc import Builder, Graph
from convc.ir import Op
from convc.pass_manager import parse_pipeline
from convc.rewrite import RewritePattern, Rewriter, apply_patterns, pattern_pass
from convc.verify import verify_graph


def _relu_chain(length: int) -> Graph:
    b = Builder("chain")
    x = b.input("x", (2, 3), "f32")
    for i in range(length):
        x = b.relu(x, name=f"r{i}")
    b.output(x)
    return b.build()


class ReluToMaxOfTwo(RewritePattern):
    """relu(x) -> relu(relu(x) + relu(x)): two inserted ops per anchor, then the anchor replaced."""

    kind = "relu"

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        x = op.operands[0]
        first = rewriter.create("relu", x, suffix="a")
        second = rewriter.create("relu", x, suffix="a")  # same suffix: must get a fresh name
        total = rewriter.create("add", first, second, suffix="sum")
        rewriter.replace_anchor(rewriter.create("relu", total, suffix="out"))


def test_inserted_ops_precede_their_anchor_and_names_stay_unique() -> None:
    graph = _relu_chain(5)
    assert apply_patterns(graph, [ReluToMaxOfTwo()])
    verify_graph(graph)  # defs before uses, unique names
    kinds = [op.kind for op in graph.ops]
    assert kinds == ["relu", "relu", "add", "relu"] * 5
    names = [op.name for op in graph.ops]
    assert names[:4] == ["r0.a", "r0.a_1", "r0.sum", "r0"]
    assert graph.outputs[0].name == "r4"


def test_sweep_does_not_revisit_the_ops_it_created() -> None:
    graph = _relu_chain(3)
    apply_patterns(graph, [ReluToMaxOfTwo()])
    assert len(graph.ops) == 12


class DropNextRelu(RewritePattern):
    """Erases the *following* op behind the rewriter's back (through Graph directly)."""

    kind = "relu"

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        graph = rewriter.graph
        users = list(op.result.users)
        if len(users) != 1 or users[0].kind != "relu":
            return
        follower = users[0]
        graph.replace_all_uses_with(follower.result, op.result)
        graph.erase_op(follower)
        rewriter.create("relu", op.operands[0], suffix="twin")
        rewriter.changed = True


def test_foreign_edits_of_the_op_list_are_survived() -> None:
    graph = _relu_chain(4)  # r0 r1 r2 r3: r0 drops r1, r2 drops r3
    apply_patterns(graph, [DropNextRelu()])
    verify_graph(graph)
    assert [op.name for op in graph.ops] == ["r0.twin", "r0", "r2.twin", "r2"]


def test_constants_and_numbers_survive_a_rewrite() -> None:
    b = Builder("c")
    x = b.input("x", (4,), "f32")
    b.output(b.relu(b.add(x, b.constant("k", np.arange(4, dtype=np.float32)))))
    graph = b.build()
    apply_patterns(graph, [ReluToMaxOfTwo()])
    verify_graph(graph)
    assert [op.kind for op in graph.ops] == ["constant", "add", "relu", "relu", "add", "relu"]


@dataclass(frozen=True)
class PeelOutputRelu(RewritePattern):
    """An output relu(relu(x)) -> relu(x): once a sweep, since the relu it leaves as the
    output was visited before it."""

    kind = "relu"
    name = "peel-output-relu"
    enabled: bool = True  # an option

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        producer = op.operands[0].producer
        if self.enabled and producer is not None and producer.kind == "relu" and op.result in rewriter.graph.outputs:
            rewriter.replace_anchor(producer.result)


def test_a_pattern_pass_takes_its_name_and_options_from_the_pattern() -> None:
    cls = pattern_pass(PeelOutputRelu, "peels relus")
    assert (cls.__name__, cls.name, cls.summary, cls.__module__) == ("PeelOutputRelu", "peel-output-relu", "peels relus", __name__)
    assert [(f.name, f.type, f.default) for f in dataclasses.fields(cls)] == [("enabled", bool, True)]
    (parsed,) = parse_pipeline("peel-output-relu{enabled=false}", {cls.name: cls})
    assert parsed == cls(enabled=False) and parsed.spelling() == "peel-output-relu{enabled=false}"
    assert not parsed.run(_relu_chain(4)) and cls().run(_relu_chain(4))  # the option reaches the pattern


def test_until_stable_sweeps_again_while_a_sweep_changes_something() -> None:
    once, stable = _relu_chain(8), _relu_chain(8)
    assert pattern_pass(PeelOutputRelu, "")().run(once) and pattern_pass(PeelOutputRelu, "", until_stable=True)().run(stable)
    assert (len(once.ops), len(stable.ops)) == (7, 1)

"""Page 8's account of how the recorded model does induction, measured on the model itself:
which layer-0 heads layer 1's induction rests on (every set of them zeroed), and what each
head does inside the repeat and before it. The numbers are the model's, and so are the words."""

from __future__ import annotations

import itertools

import pytest
import torch

from attnviz.models.induction import api, mechanism
from attnviz.models.induction.recorded import recorded
from attnviz.models.induction.train import held_out, measure
from attnviz.teach.lessons import grow as G

LAST = 4000


def test_layer_1s_induction_rests_on_head_2_alone():
    m = mechanism.mechanism_at(LAST)
    assert m.base == pytest.approx(0.72, abs=0.01)
    assert set(m.zeroed) == {c for k in range(1, 5) for c in itertools.combinations(range(4), k)}
    assert m.carriers == (2,)
    assert m.zeroed[(2,)] == pytest.approx(0.14, abs=0.01)  # head 2 removed: ~0.72 -> ~0.14
    assert m.zeroed[(0, 1, 3)] == pytest.approx(0.72, abs=0.01)  # the other three: nothing lost
    assert m.kept((2,)) == m.zeroed[(0, 1, 3)]
    for dead, score in m.zeroed.items():  # every set with head 2 falls, every set without keeps
        assert (score < 0.2) == (2 in dead), dead
    # head 2 is needed at the repeat's positions, where layer 1's induction queries are
    assert m.zeroed_inside == pytest.approx(0.18, abs=0.02)
    assert m.zeroed_before == pytest.approx(0.56, abs=0.02)
    assert mechanism.mechanism_at(LAST) is m  # computed once
    with pytest.raises(ValueError, match="no checkpoint at step 4050"):
        mechanism.mechanism_at(4050)


def test_the_ablations_are_the_models_own():
    r = recorded().reference
    model, test = r.model(LAST), held_out(r.config)
    m = mechanism.mechanism_at(LAST)
    alone = measure(model, test, ablate=((0, 0), (0, 1), (0, 3)))
    assert m.zeroed[(0, 1, 3)] == pytest.approx(float(alone.scores["induction"][1].max()))
    # zeroing at every position is zeroing the head
    everywhere = measure(model, test, ablate=((0, 2),), where=torch.ones(256, 24, dtype=torch.bool))
    assert float(everywhere.scores["induction"][1].max()) == pytest.approx(m.zeroed[(2,)])
    nowhere = measure(model, test, ablate=((0, 2),), where=torch.zeros(256, 24, dtype=torch.bool))
    assert float(nowhere.scores["induction"][1].max()) == pytest.approx(m.base)
    # the single-head bars of the ablation chart read the same numbers
    ab = api.ablation_at(LAST)
    assert [h.induction for h in ab.heads] == [m.zeroed[(h,)] for h in range(4)]


def test_head_2_is_a_duplicate_token_head_inside_the_repeat_and_current_token_before_it():
    roles = mechanism.roles_at(LAST)
    head2 = roles[2]
    assert (head2.layer, head2.head) == (0, 2)
    inside, before = head2.scores["inside"], head2.scores["before"]
    assert inside["duplicate"] >= 0.75 and inside["current"] < 0.3 and inside["previous"] < 0.05
    assert before["current"] >= 0.9 and before["previous"] < 0.05
    assert head2.name_in("inside") == "duplicate-token"
    assert head2.name_in("before") == "current-token"
    assert head2.label() == (
        f"duplicate-token head inside the repeat ({inside['duplicate']:.2f}); "
        f"current-token head before the repeat ({before['current']:.2f})"
    )
    # no layer-0 head is a previous-token head anywhere; heads 0, 1 and 3 are named nowhere
    for r in roles[:4]:
        assert max(r.scores[p]["previous"] for p in mechanism.PARTS) < 0.5
    for r in (roles[0], roles[1], roles[3]):
        assert r.name_in("inside") is None and r.name_in("before") is None
    # layer 1: induction heads inside the repeat
    for r in roles[4:]:
        assert r.name_in("inside") == "induction"


def test_part_scores_measure_what_they_say_on_a_made_up_head():
    # one sequence of 6 tokens whose last 3 repeat the 3 before: a head that puts all its
    # weight on the earlier copy inside the repeat and on itself before it
    tokens = torch.tensor([[5, 6, 7, 5, 6, 7]])
    repeat = torch.tensor([3])
    w = torch.zeros(1, 1, 1, 6, 6)
    for i in range(6):
        w[0, 0, 0, i, i - 3 if i >= 3 else i] = 1.0
    s = mechanism.part_scores(w, tokens, repeat)
    assert float(s["inside"]["duplicate"][0, 0]) == 1.0
    assert float(s["inside"]["current"][0, 0]) == 0.0
    assert float(s["before"]["current"][0, 0]) == 1.0
    assert float(s["before"]["previous"][0, 0]) == 0.0
    assert "induction" not in s["before"]


def test_the_pages_words_are_built_from_the_numbers():
    m = mechanism.mechanism_at(LAST)
    said = G.ablation_view(LAST).mechanism
    assert said[0] == (
        "Layer 1's induction rests on head 0.2: with heads 0.0, 0.1 and 0.3 zeroed together, "
        f"its score is {m.zeroed[(0, 1, 3)]:.2f} (every head on: {m.base:.2f}); with head 0.2 "
        f"zeroed, {m.zeroed[(2,)]:.2f} (all 4 zeroed: {m.zeroed[(0, 1, 2, 3)]:.2f})."
    )
    assert f"falls to {m.zeroed_inside:.2f}; zeroed only before the repeat, to " in said[1]
    assert said[1].endswith("It is needed most inside the repeat.")
    head2 = [s for s in said if s.startswith("Head 0.2,")]
    assert len(head2) == 1
    assert "(a duplicate-token head there)" in head2[0]
    assert "(a current-token head there)" in head2[0]
    assert head2[0].index("duplicate-token") < head2[0].index("before the repeat")
    # the run's list names head 2 by part, never "current-token" from its average alone
    names = G.run_view(LAST).names
    assert names[2].startswith("Head 0.2: duplicate-token head inside the repeat (0.79)")
    # the old, unmeasured claim is gone from every sentence of the run's view
    view = G.run_view(LAST)
    assert "weaker patterns" not in view.layer0
    assert "measured under “Ablate” below" in view.layer0


def test_before_layer_1_has_an_induction_head_nothing_is_said_to_carry_it():
    said = G.ablation_view(0).mechanism
    m = mechanism.mechanism_at(0)
    assert m.base < 0.5
    assert said[0].startswith(
        f"Layer 1 has no induction head yet at this step (its best induction score is {m.base:.2f}"
    )
    assert not any("rests on" in s for s in said)
    # an ablation that changes nothing says so
    assert all("unchanged to the percent" in s for s in G.ablation_view(0).sentences)

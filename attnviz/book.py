"""Book mode: the chapter's own arguments, seeds and printed tensors (4 decimals, as printed).

The printouts come from the chapter's notebook (``ch03.ipynb``) and are the reference the pages
show beside the app's own numbers; :func:`matches_printout` compares at the printout's precision.
"""

from __future__ import annotations

import torch

from .trace import ModuleSpec

D_IN, D_OUT, CONTEXT_LENGTH = 3, 2, 6

# The seeds the chapter uses for each section.
SEED_V1 = 123
SEED_V2 = 789  # also the masking walkthrough, which reuses sa_v2's weights
SEED_CAUSAL = 123
SEED_MULTIHEAD = 123
SEED_DROPOUT = 123
DROPOUT_EXAMPLE_P = 0.5

SPEC_V1 = ModuleSpec("v1", D_IN, D_OUT, seed=SEED_V1)
SPEC_V2 = ModuleSpec("v2", D_IN, D_OUT, seed=SEED_V2)
# CausalAttention creates W_query, W_key, W_value in the same order as SelfAttention_v2, so with
# seed 789 it holds sa_v2's weights: the chapter's masking walkthrough (section 3.5.1).
SPEC_MASKING_WALK = ModuleSpec("causal", D_IN, D_OUT, CONTEXT_LENGTH, 0.0, 1, False, SEED_V2)
SPEC_CAUSAL = ModuleSpec("causal", D_IN, D_OUT, CONTEXT_LENGTH, 0.0, 1, False, SEED_CAUSAL)
SPEC_WRAPPER = ModuleSpec("wrapper", D_IN, D_OUT, CONTEXT_LENGTH, 0.0, 2, False, SEED_MULTIHEAD)
SPEC_MHA = ModuleSpec("mha", D_IN, D_OUT, CONTEXT_LENGTH, 0.0, 2, False, SEED_MULTIHEAD)
# Exercise 3.2: the wrapper with d_out=1 per head and two heads gives a 2-wide output.
SPEC_EXERCISE_3_2 = ModuleSpec("wrapper", D_IN, 1, CONTEXT_LENGTH, 0.0, 2, False, SEED_MULTIHEAD)
EXERCISE_3_2_SHAPE = (2, 6, 2)
EXERCISE_3_3_PARAMETERS = 2_360_064

PRINTED = {
    # section 3.3.1, query x^(2) = inputs[1]
    "simple_scores_2": [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],
    "simple_sum_weights_2": [0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656],
    "simple_weights_2": [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581],
    "simple_context_2": [0.4419, 0.6515, 0.5683],
    # section 3.3.2, all queries
    "simple_scores": [
        [0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310],
        [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865],
        [0.9422, 1.4754, 1.4570, 0.8296, 0.7154, 1.0605],
        [0.4753, 0.8434, 0.8296, 0.4937, 0.3474, 0.6565],
        [0.4576, 0.7070, 0.7154, 0.3474, 0.6654, 0.2935],
        [0.6310, 1.0865, 1.0605, 0.6565, 0.2935, 0.9450],
    ],
    "simple_weights": [
        [0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452],
        [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581],
        [0.1390, 0.2369, 0.2326, 0.1242, 0.1108, 0.1565],
        [0.1435, 0.2074, 0.2046, 0.1462, 0.1263, 0.1720],
        [0.1526, 0.1958, 0.1975, 0.1367, 0.1879, 0.1295],
        [0.1385, 0.2184, 0.2128, 0.1420, 0.0988, 0.1896],
    ],
    "simple_context": [
        [0.4421, 0.5931, 0.5790],
        [0.4419, 0.6515, 0.5683],
        [0.4431, 0.6496, 0.5671],
        [0.4304, 0.6298, 0.5510],
        [0.4671, 0.5910, 0.5266],
        [0.4177, 0.6503, 0.5645],
    ],
    # section 3.4.1, seed 123, W as three torch.rand(3, 2)
    "trainable_query_2": [0.4306, 1.4551],
    "trainable_scores_2": [1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440],
    "trainable_weights_2": [0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820],
    "trainable_context_2": [0.3061, 0.8210],
    "sa_v1": [
        [0.2996, 0.8053],
        [0.3061, 0.8210],
        [0.3058, 0.8203],
        [0.2948, 0.7939],
        [0.2927, 0.7891],
        [0.2990, 0.8040],
    ],
    "sa_v2": [
        [-0.0739, 0.0713],
        [-0.0748, 0.0703],
        [-0.0749, 0.0702],
        [-0.0760, 0.0685],
        [-0.0763, 0.0679],
        [-0.0754, 0.0693],
    ],
    # exercise 3.1: v1 and v2 both seed 123, v2's weights transposed into v1
    "exercise_3_1": [
        [-0.5337, -0.1051],
        [-0.5323, -0.1080],
        [-0.5323, -0.1079],
        [-0.5297, -0.1076],
        [-0.5311, -0.1066],
        [-0.5299, -0.1081],
    ],
    # section 3.5.1, sa_v2's weights (seed 789)
    "masking_weights_unmasked": [
        [0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510],
        [0.2041, 0.1659, 0.1662, 0.1496, 0.1665, 0.1477],
        [0.2036, 0.1659, 0.1662, 0.1498, 0.1664, 0.1480],
        [0.1869, 0.1667, 0.1668, 0.1571, 0.1661, 0.1564],
        [0.1830, 0.1669, 0.1670, 0.1588, 0.1658, 0.1585],
        [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529],
    ],
    "masking_masked_scores": [
        [0.2899, float("-inf"), float("-inf"), float("-inf"), float("-inf"), float("-inf")],
        [0.4656, 0.1723, float("-inf"), float("-inf"), float("-inf"), float("-inf")],
        [0.4594, 0.1703, 0.1731, float("-inf"), float("-inf"), float("-inf")],
        [0.2642, 0.1024, 0.1036, 0.0186, float("-inf"), float("-inf")],
        [0.2183, 0.0874, 0.0882, 0.0177, 0.0786, float("-inf")],
        [0.3408, 0.1270, 0.1290, 0.0198, 0.1290, 0.0078],
    ],
    "masking_weights": [
        [1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
        [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
        [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
        [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529],
    ],
    # section 3.5.2, torch.manual_seed(123); nn.Dropout(0.5)
    "dropout_ones": [
        [2.0, 2.0, 0.0, 2.0, 2.0, 0.0],
        [0.0, 0.0, 0.0, 2.0, 0.0, 2.0],
        [2.0, 2.0, 2.0, 2.0, 0.0, 2.0],
        [0.0, 2.0, 2.0, 0.0, 0.0, 2.0],
        [0.0, 2.0, 0.0, 2.0, 0.0, 2.0],
        [0.0, 2.0, 2.0, 2.0, 2.0, 0.0],
    ],
    "dropout_weights": [
        [2.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.7599, 0.6194, 0.6206, 0.0000, 0.0000, 0.0000],
        [0.0000, 0.4921, 0.4925, 0.0000, 0.0000, 0.0000],
        [0.0000, 0.3966, 0.0000, 0.3775, 0.0000, 0.0000],
        [0.0000, 0.3327, 0.3331, 0.3084, 0.3331, 0.0000],
    ],
    # section 3.5.3, CausalAttention seed 123 on the batch (first example; both are equal)
    "causal_attention": [
        [-0.4519, 0.2216],
        [-0.5874, 0.0058],
        [-0.6300, -0.0632],
        [-0.5675, -0.0843],
        [-0.5526, -0.0981],
        [-0.5299, -0.1081],
    ],
    # section 3.6.1, MultiHeadAttentionWrapper seed 123, d_out=2, num_heads=2 (first example)
    "wrapper": [
        [-0.4519, 0.2216, 0.4772, 0.1063],
        [-0.5874, 0.0058, 0.5891, 0.3257],
        [-0.6300, -0.0632, 0.6202, 0.3860],
        [-0.5675, -0.0843, 0.5478, 0.3589],
        [-0.5526, -0.0981, 0.5321, 0.3428],
        [-0.5299, -0.1081, 0.5077, 0.3493],
    ],
    # section 3.6.2, MultiHeadAttention seed 123, d_out=2, num_heads=2 (first example)
    "multihead": [
        [0.3190, 0.4858],
        [0.2943, 0.3897],
        [0.2856, 0.3593],
        [0.2693, 0.3873],
        [0.2639, 0.3928],
        [0.2575, 0.4028],
    ],
}

PRINTED_SHAPES = {
    "causal_attention": (2, 6, 2),
    "wrapper": (2, 6, 4),
    "multihead": (2, 6, 2),
}


def printed(name: str) -> torch.Tensor:
    """One of the chapter's printouts as a tensor."""
    return torch.tensor(PRINTED[name])


def matches_printout(actual: torch.Tensor, name: str) -> tuple[bool, float]:
    """Does ``actual`` print as the chapter printed it? (within half a unit of the 4th decimal,
    plus float32 slack); returns (match, largest difference on finite entries)."""
    expected = printed(name)
    actual = actual.detach().to(torch.float32)
    if tuple(actual.shape) != tuple(expected.shape):
        return False, float("inf")
    same_inf = torch.equal(torch.isinf(actual), torch.isinf(expected))
    finite = torch.isfinite(expected)
    diff = (actual[finite] - expected[finite]).abs()
    worst = float(diff.max()) if diff.numel() else 0.0
    return same_inf and worst <= 0.5e-4 + 1e-6, worst


def book_batch_inputs() -> torch.Tensor:
    """The chapter's batch: two copies of the 6x3 inputs, (2, 6, 3)."""
    from .inputs import book_batch

    return book_batch()

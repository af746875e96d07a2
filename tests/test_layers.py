"""The shared layer rule (lalr_core.core.models.layers) and the three places that use it."""

import pytest
import torch
from torch import nn

from lalr_core.methods import spectra as spectral
from lalr_core.core.models.layers import weight_layers
from lalr_core.methods.orthogonal.transform import transformed_params
from lalr_core.methods.layer_lr.tempbalance import layer_groups


def _net():
    return nn.Sequential(nn.Conv1d(2, 3, 3), nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4),
                         nn.ConvTranspose2d(4, 2, 3), nn.Flatten(), nn.Linear(8, 5),
                         nn.LayerNorm(5), nn.Linear(5, 2, bias=False))


def test_weight_layers_are_convs_and_linears_in_order():
    assert list(weight_layers(_net())) == ["0", "1", "3", "5", "7"]
    assert list(weight_layers(_net(), ("conv",))) == ["0", "1", "3"]
    assert list(weight_layers(_net(), ("linear",))) == ["5", "7"]
    with pytest.raises(ValueError, match="unknown layer kinds"):
        weight_layers(_net(), ("norm",))


def test_every_per_layer_method_sees_the_same_layers():
    net = _net()
    names = list(weight_layers(net))
    assert list(spectral.layer_matrices(net, conv="flatten")) == names
    assert layer_groups(net)[0] == names
    assert transformed_params(net, "all") == [f"{n}.weight" for n in names]
    assert transformed_params(net, "conv") == [f"{n}.weight" for n in weight_layers(net, ("conv",))]
    # the BN after conv "1" and the LayerNorm after linear "5" join those layers' groups
    groups = dict(zip(*layer_groups(net)[:2]))
    assert {id(p) for p in groups["1"]} == {id(p) for p in [*net[1].parameters(), *net[2].parameters()]}
    assert torch.is_tensor(spectral.layer_matrices(net, conv="flatten")["3"])

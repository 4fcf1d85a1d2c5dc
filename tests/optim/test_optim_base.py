"""The Optimizer base: param groups, validation, zero_grad, closures, state_dict, repr, and the seed's examples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lucid_core as lc
import lucid_optim as optim
from lucid_optim.lr_scheduler import StepLR


def param(values, device, dtype=lc.float32) -> lc.Parameter:
    return lc.Parameter(lc.asarray(np.asarray(values, dtype=np.float64), device=device).astype(dtype))


def set_grad(p: lc.Parameter, values) -> None:
    p.grad = lc.asarray(np.asarray(values, dtype=np.float64), device=p.device).astype(p.dtype)


# -- the seed's examples --------------------------------------------------------------------------
def test_seed_single_group_training_loop_lowers_the_loss(device: lc.Device) -> None:
    w = lc.Parameter(lc.zeros(3, device=device))
    x = lc.asarray([[1.0, 2.0, 0.5], [0.0, 1.0, -1.0], [2.0, 0.0, 1.0], [1.0, 1.0, 1.0]], device=device)
    y = lc.asarray([1.0, -1.0, 2.5, 1.5], device=device)
    opt = optim.SGD([w], defaults={"lr": 0.05})
    sched = StepLR(opt, step_size=5, gamma=0.5)
    losses = []
    for _epoch in range(10):
        loss = ((x @ w - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05 * 0.25)


def test_seed_two_groups_with_their_own_lr_and_weight_decay(device: lc.Device) -> None:
    backbone, head = param([1.0, -2.0], device), param([0.5], device)
    opt = optim.SGD(
        [{"params": [backbone], "lr": 1e-4}, {"params": [head], "lr": 1e-3, "weight_decay": 1e-4}],
        defaults={"lr": 1e-3, "weight_decay": 0.0},
    )
    assert [g["lr"] for g in opt.param_groups] == [1e-4, 1e-3]
    assert [g["weight_decay"] for g in opt.param_groups] == [0.0, 1e-4]
    set_grad(backbone, [1.0, 1.0])
    set_grad(head, [2.0])
    opt.step()
    np.testing.assert_allclose(np.asarray(backbone.detach()), [1.0 - 1e-4, -2.0 - 1e-4], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(head.detach()), [0.5 - 1e-3 * (2.0 + 1e-4 * 0.5)], rtol=1e-6)


def test_seed_state_dict_save_then_load_in_order(device: lc.Device) -> None:
    p = param([1.0, 2.0], device)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    sched = StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        set_grad(p, [1.0, -1.0])
        opt.step()
        sched.step()
    opt_state, sched_state = opt.state_dict(), sched.state_dict()
    q = param(np.asarray(p.detach()), device)
    opt2 = optim.SGD([q], lr=0.1, momentum=0.9)
    opt2.load_state_dict(opt_state)
    sched2 = StepLR(opt2, step_size=2, gamma=0.5)
    sched2.load_state_dict(sched_state)
    for o, s, t in ((opt, sched, p), (opt2, sched2, q)):
        set_grad(t, [0.5, 0.5])
        o.step()
        s.step()
    np.testing.assert_allclose(np.asarray(q.detach()), np.asarray(p.detach()), rtol=1e-6)
    assert sched2.get_last_lr() == sched.get_last_lr() == [0.1 * 0.25]


# -- construction -------------------------------------------------------------------------------------
def test_non_parameter_raises_type_error_naming_the_type(device: lc.Device) -> None:
    with pytest.raises(TypeError, match="can only optimize Parameters, got Tensor"):
        optim.SGD([lc.zeros(3, device=device)], lr=0.1)
    with pytest.raises(TypeError, match="got float"):
        optim.Adam([1.0])
    with pytest.raises(TypeError, match="single Parameter"):
        optim.SGD(param([1.0], device), lr=0.1)


def test_empty_parameter_list_raises() -> None:
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)


def test_same_parameter_in_two_groups_raises(device: lc.Device) -> None:
    p, q = param([1.0], device), param([2.0], device)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [q, p]}], lr=0.1)
    opt = optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [p]})
    with pytest.raises(ValueError, match="more than once"):
        optim.SGD([p, p], lr=0.1)


def test_add_param_group_fills_in_defaults(device: lc.Device) -> None:
    p, q = param([1.0], device), param([2.0], device)
    opt = optim.Adam([p], lr=0.01, betas=(0.8, 0.9))
    opt.add_param_group({"params": q, "lr": 0.5})
    assert len(opt.param_groups) == 2
    assert opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["betas"] == (0.8, 0.9)
    assert opt.param_groups[1]["params"][0] is q


@pytest.mark.parametrize(
    ("cls", "kwargs", "match"),
    [
        (optim.SGD, {"lr": -0.1}, "Invalid learning rate"),
        (optim.SGD, {"lr": 0.1, "momentum": -0.5}, "momentum"),
        (optim.SGD, {"lr": 0.1, "nesterov": True}, "Nesterov"),
        (optim.SGD, {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": True}, "Nesterov"),
        (optim.SGD, {"lr": 0.1, "weight_decay": -1.0}, "weight_decay"),
        (optim.Adam, {"betas": (1.0, 0.999)}, "beta parameter at index 0"),
        (optim.Adam, {"betas": (0.9, -0.1)}, "beta parameter at index 1"),
        (optim.AdamW, {"eps": -1e-8}, "epsilon"),
        (optim.NAdam, {"momentum_decay": -1.0}, "momentum_decay"),
        (optim.RAdam, {"betas": (0.9, 1.5)}, "beta"),
        (optim.Adamax, {"lr": -1.0}, "learning rate"),
        (optim.RMSprop, {"alpha": -0.1}, "alpha"),
        (optim.Adagrad, {"lr_decay": -0.1}, "lr_decay"),
        (optim.Adadelta, {"rho": 1.5}, "rho"),
        (optim.Rprop, {"etas": (1.5, 1.2)}, "eta"),
        (optim.Adafactor, {"d": 0.5}, "Clipping threshold"),
        (optim.Adafactor, {"beta2_decay": 0.5}, "beta2_decay"),
        (optim.Lion, {"betas": (0.9, 1.0)}, "beta"),
        (optim.LBFGS, {"line_search_fn": "armijo"}, "line_search_fn"),
    ],
)
def test_invalid_hyperparameters_raise_value_error(device: lc.Device, cls, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        cls([param([1.0], device)], **kwargs)


def test_invalid_group_hyperparameter_raises_too(device: lc.Device) -> None:
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SGD([{"params": [param([1.0], device)], "lr": -1.0}], lr=0.1)


@pytest.mark.parametrize("name", [n for n in optim.__all__ if n not in ("Optimizer", "ParamsT", "lr_scheduler")])
def test_every_optimizer_accepts_the_seed_defaults_form(device: lc.Device, name: str) -> None:
    cls = getattr(optim, name)
    opt = cls([param([1.0, 2.0], device)], defaults={"lr": 0.123})
    assert opt.param_groups[0]["lr"] == 0.123
    with pytest.raises(ValueError, match="unknown hyperparameter"):
        cls([param([1.0], device)], defaults={"lr": 0.1, "lr_typo": 1.0})


@pytest.mark.parametrize("name", [n for n in optim.__all__ if n not in ("Optimizer", "ParamsT", "lr_scheduler")])
def test_a_keyword_and_a_different_defaults_entry_for_one_hyperparameter_raise(device: lc.Device, name: str) -> None:
    cls = getattr(optim, name)
    with pytest.raises(ValueError, match=r"lr is given twice, as the keyword lr=0\.5 and in defaults= as 0\.25"):
        cls([param([1.0], device)], lr=0.5, defaults={"lr": 0.25})


def test_defaults_entries_that_agree_with_the_keywords_are_accepted(device: lc.Device) -> None:
    # the same value both ways, a keyword left at its declared default, and a list for a tuple are no conflict
    opt = optim.Adam([param([1.0], device)], lr=0.5, betas=(0.8, 0.9), defaults={"lr": 0.5, "eps": 1e-6,
                                                                               "betas": [0.8, 0.9]})  # fmt: skip
    assert opt.defaults["lr"] == 0.5 and opt.defaults["eps"] == 1e-6 and tuple(opt.defaults["betas"]) == (0.8, 0.9)
    with pytest.raises(ValueError, match="betas is given twice"):
        optim.Adam([param([1.0], device)], betas=(0.8, 0.9), defaults={"betas": (0.5, 0.9)})
    # AdamW declares weight_decay=1e-2: a defaults= entry replaces it, a different keyword too conflicts
    assert optim.AdamW([param([1.0], device)], defaults={"weight_decay": 0.5}).defaults["weight_decay"] == 0.5
    with pytest.raises(ValueError, match="weight_decay is given twice"):
        optim.AdamW([param([1.0], device)], weight_decay=0.1, defaults={"weight_decay": 0.5})


def test_a_param_group_key_one_typo_from_a_hyperparameter_raises(device: lc.Device) -> None:
    said = r"unknown hyperparameter\(s\) 'weight_decy' \(did you mean 'weight_decay'\?\)"
    with pytest.raises(ValueError, match=said):
        optim.SGD([{"params": [param([1.0], device)], "weight_decy": 0.1}], lr=0.1)


def test_other_param_group_keys_are_kept_as_in_pytorch(device: lc.Device) -> None:
    # programs tag groups ("name", "lr_scale") and read the tags back in their schedulers
    opt = optim.AdamW([{"params": [param([1.0], device)], "name": "decay", "lr_scale": 0.5}], lr=0.1)
    assert opt.param_groups[0]["name"] == "decay" and opt.param_groups[0]["lr_scale"] == 0.5
    opt.load_state_dict(opt.state_dict())
    assert opt.param_groups[0]["name"] == "decay"


class _Plain(optim.Optimizer):
    """``p -= lr * g``; the base applies ``maximize`` and, if the class asks, ``weight_decay``."""

    def __init__(self, params, lr: float = 0.5, weight_decay: float = 0.0, maximize: bool = False) -> None:
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, maximize=maximize))

    def apply_single(self, param, grad, state, group) -> None:
        param.sub_(grad, alpha=group["lr"])


class _PlainL2(_Plain):
    weight_decay_style = "l2"


class _PlainDecoupled(_Plain):
    weight_decay_style = "decoupled"


@pytest.mark.parametrize(
    ("cls", "maximize", "expected"),
    [
        (_Plain, False, 2.0 - 0.5 * 1.0),  # no weight_decay_style: the base leaves weight_decay to the subclass
        (_PlainL2, False, 2.0 - 0.5 * (1.0 + 0.25 * 2.0)),  # the gradient gains weight_decay * p
        (_PlainL2, True, 2.0 - 0.5 * (-1.0 + 0.25 * 2.0)),  # ... after maximize negates it
        (_PlainDecoupled, False, 2.0 * (1 - 0.5 * 0.25) - 0.5 * 1.0),  # p shrinks by 1 - lr * wd first
        (_PlainDecoupled, True, 2.0 * (1 - 0.5 * 0.25) + 0.5 * 1.0),
    ],
)
def test_the_base_step_applies_maximize_and_the_declared_weight_decay(device: lc.Device, cls, maximize, expected):
    p = param([2.0], device, lc.float64) if lc.float64 in device.backend.dtypes else param([2.0], device)
    opt = cls([p], weight_decay=0.25, maximize=maximize)
    set_grad(p, [1.0])
    opt.step()
    assert float(p.detach()[0]) == pytest.approx(expected, rel=1e-6)


def test_a_groups_decoupled_weight_decay_flag_picks_the_decoupled_form(device: lc.Device) -> None:
    p, q = param([2.0], device), param([2.0], device)
    opt = optim.Adam([{"params": [p]}, {"params": [q], "decoupled_weight_decay": True}], lr=0.1, weight_decay=0.5)
    set_grad(p, [1.0])
    set_grad(q, [1.0])
    opt.step()
    # Adam's first step moves by about lr * sign(g'); L2 makes g' = 1 + 0.5 * 2, decoupled shrinks p by 1 - 0.05
    assert float(p.detach()[0]) == pytest.approx(2.0 - 0.1, rel=1e-5)
    assert float(q.detach()[0]) == pytest.approx(2.0 * 0.95 - 0.1, rel=1e-5)


# -- stepping -------------------------------------------------------------------------------------------
def test_zero_grad_sets_to_none_or_zeros(device: lc.Device) -> None:
    p = param([1.0, 2.0], device)
    opt = optim.SGD([p], lr=0.1)
    set_grad(p, [3.0, 4.0])
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and np.asarray(p.grad).tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_step_returns_the_closure_loss_computed_with_grad_enabled(device: lc.Device) -> None:
    p = param([3.0], device)
    opt = optim.SGD([p], lr=0.25)

    def closure() -> lc.Tensor:
        opt.zero_grad()
        loss = (p * p).sum()
        assert lc.is_grad_enabled()
        loss.backward()
        return loss

    with lc.no_grad():
        loss = opt.step(closure)
    assert float(loss) == 9.0
    assert np.asarray(p.detach()).tolist() == [3.0 - 0.25 * 6.0]


def test_parameters_without_gradients_are_skipped(device: lc.Device) -> None:
    p, q = param([1.0], device), param([2.0], device)
    opt = optim.Adam([p, q], lr=0.1)
    set_grad(p, [1.0])
    opt.step()
    assert opt.state[q] == {} and np.asarray(q.detach()).tolist() == [2.0]
    assert opt.state[p]["step"] == 1 and np.asarray(p.detach()).tolist() != [1.0]


def test_update_is_in_place_and_keeps_the_parameter_object(device: lc.Device) -> None:
    p = param([1.0, 2.0], device)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    set_grad(p, [1.0, 1.0])
    opt.step()
    buf = opt.state[p]["momentum_buffer"]
    set_grad(p, [1.0, 1.0])
    opt.step()
    assert opt.param_groups[0]["params"][0] is p and p.is_leaf and p.requires_grad
    assert opt.state[p]["momentum_buffer"] is buf
    np.testing.assert_allclose(np.asarray(buf), [1.9, 1.9], rtol=1e-6)


def test_one_step_evaluates_once_per_backend(device: lc.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    params = [param([1.0, 2.0], device), param([[0.5]], device)]
    opt = optim.Adam(params, lr=0.1)
    calls = []
    original = device.backend.eval
    monkeypatch.setattr(device.backend, "eval", lambda *arrays: calls.append(len(arrays)) or original(*arrays))
    for p in params:
        p.grad = lc.ones_like(p.detach())
    opt.step()
    assert len(calls) == 1
    assert calls[0] == 2 + 2 + 2 * 2  # both parameters, their gradients and their two moment tensors


def test_lbfgs_needs_a_closure_and_one_group(device: lc.Device) -> None:
    p, q = param([1.0], device), param([2.0], device)
    with pytest.raises(ValueError, match="closure"):
        optim.LBFGS([p]).step()
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [p]}, {"params": [q]}])


def test_lbfgs_minimises_a_quadratic(device: lc.Device) -> None:
    p = param([3.0, -2.0], device, lc.float32)
    opt = optim.LBFGS([p], lr=1.0, line_search_fn="strong_wolfe")

    def closure() -> lc.Tensor:
        opt.zero_grad()
        loss = ((p - lc.asarray([1.0, 0.5], device=device)) ** 2).sum()
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(np.asarray(p.detach()), [1.0, 0.5], atol=1e-5)


@pytest.mark.parametrize("dtype", [lc.float32, lc.float64])
def test_lbfgs_keeps_reduced_scalars_in_the_parameter_dtype(device: lc.Device, dtype: lc.DType) -> None:
    # PyTorch keeps ys, ro and H_diag (products of dot products) as 0-d tensors of the parameters' dtype
    if dtype not in device.backend.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    p = param([3.0, -2.0, 0.5], device, dtype)
    opt = optim.LBFGS([p], lr=1.0, max_iter=3, line_search_fn="strong_wolfe")

    def closure() -> lc.Tensor:
        opt.zero_grad()
        loss = (p**4).sum() + (p**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    st = opt.state[p]
    assert st["ro"]
    for value in [*st["ro"], st["H_diag"]]:
        assert isinstance(value, lc.Tensor)
        assert value.shape == ()
        assert value.dtype == dtype


# -- state_dict ------------------------------------------------------------------------------------------
def test_state_dict_maps_parameters_to_indices_and_copies_state(device: lc.Device) -> None:
    p, q = param([1.0], device), param([2.0, 3.0], device)
    opt = optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1, momentum=0.9)
    set_grad(p, [1.0])
    set_grad(q, [1.0, 1.0])
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.5
    assert set(sd["state"]) == {0, 1}
    saved = np.asarray(sd["state"][1]["momentum_buffer"]).copy()
    set_grad(q, [5.0, 5.0])
    opt.step()
    np.testing.assert_array_equal(np.asarray(sd["state"][1]["momentum_buffer"]), saved)
    sd["param_groups"][0]["lr"] = 99.0
    assert opt.param_groups[0]["lr"] == 0.1


def test_load_state_dict_checks_group_count_and_sizes(device: lc.Device) -> None:
    p, q = param([1.0], device), param([2.0], device)
    one_group = optim.SGD([p, q], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="has 1 parameter groups, this optimizer has 2"):
        optim.SGD([{"params": [p]}, {"params": [q]}], lr=0.1).load_state_dict(one_group)
    with pytest.raises(ValueError, match="group 0 has 2 parameters, this optimizer's group 0 has 1"):
        optim.SGD([p], lr=0.1).load_state_dict(one_group)
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        optim.SGD([p], lr=0.1).load_state_dict({"state": {}})


def test_load_state_dict_restores_hyperparameters_and_moves_state_to_the_parameter(device: lc.Device) -> None:
    home = lc.get_backend("numpy").default_device
    src = param([1.0, 2.0], home, lc.float64)
    opt = optim.Adam([src], lr=0.01)
    set_grad(src, [1.0, -1.0])
    opt.step()
    sd = opt.state_dict()
    sd["param_groups"][0]["lr"] = 0.02
    dst = param([1.0, 2.0], device)
    opt2 = optim.Adam([dst], lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.02 and opt2.param_groups[0]["params"][0] is dst
    for key in ("exp_avg", "exp_avg_sq"):
        t = opt2.state[dst][key]
        assert t.device == dst.device and t.dtype == dst.dtype
    assert opt2.state[dst]["step"] == 1


def test_repr_looks_like_pytorch(device: lc.Device) -> None:
    opt = optim.SGD([param([1.0], device)], lr=0.1, momentum=0.9)
    assert repr(opt) == (
        "SGD (\nParameter Group 0\n    dampening: 0.0\n    lr: 0.1\n    maximize: False\n    momentum: 0.9\n"
        "    nesterov: False\n    weight_decay: 0.0\n)"
    )


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "Lion", "Adafactor", "Rprop", "NAdam"])
@given(
    values=st.lists(st.floats(-3.0, 3.0), min_size=2, max_size=4),
    grads=st.lists(st.floats(-2.0, 2.0), min_size=4, max_size=4),
)
def test_maximize_equals_minimizing_the_negated_gradient(name: str, values: list, grads: list) -> None:
    device = lc.get_backend("numpy").default_device
    g = grads[: len(values)]
    p, q = param(values, device, lc.float64), param(values, device, lc.float64)
    up = getattr(optim, name)([p], lr=0.05, maximize=True)
    down = getattr(optim, name)([q], lr=0.05)
    for _ in range(3):
        set_grad(p, g)
        set_grad(q, [-x for x in g])
        up.step()
        down.step()
    np.testing.assert_allclose(np.asarray(p.detach()), np.asarray(q.detach()), rtol=1e-12, atol=1e-14)

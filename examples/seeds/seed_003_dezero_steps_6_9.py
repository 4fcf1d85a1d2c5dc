"""Seed 003 (DeZero steps 6-9) with Lucid: what the seed builds by hand, Lucid's Tensor and Function provide.

The seed's ``Variable(np.array(0.5))`` is ``lucid_core.tensor(0.5, dtype=float64, requires_grad=True)``;
its ``Square``/``Exp`` classes with ``forward``/``backward`` are ``lucid_core.Function`` subclasses; its
iterative ``backward()`` is ``Tensor.backward()``. Every step prints the seed's 3.297442541400256.
"""

import lucid_core as lc


# 6.3 Square and Exp: a forward and its backward side by side (backward is written in lucid ops)
class Square(lc.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**2

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return 2 * x * dy


class Exp(lc.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return lc.exp(x)

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return lc.exp(x) * dy


def Variable(data):  # noqa: N802 - the seed's name
    return lc.tensor(data, dtype=lc.float64, requires_grad=True)


# 6.4 manual backpropagation: call each backward in reverse order (here: the chain rule by hand)
x = Variable(0.5)
a = x**2
b = lc.exp(a)
y = b**2
y_grad = lc.tensor(1.0, dtype=lc.float64)
b_grad = 2 * b.detach() * y_grad
a_grad = lc.exp(a.detach()) * b_grad
x_grad = 2 * x.detach() * a_grad
print(x_grad.item())

# 7. automatic backpropagation: every output remembers its creator, so backward() walks the graph
x = Variable(0.5)
a = Square.apply(x)
b = Exp.apply(a)
y = Square.apply(b)
assert y.grad_fn is not None and x.is_leaf
y.backward(lc.tensor(1.0, dtype=lc.float64))
print(x.grad.item())

# 8. the walk is a loop, not recursion: a 10 000-op chain backpropagates without hitting the recursion limit
z = Variable(0.5)
w = z
for _ in range(10_000):
    w = w * 1.0
w.backward()
assert z.grad.item() == 1.0


# 9.1 Python functions instead of classes
def square(x):
    return Square.apply(x)


def exp(x):
    return Exp.apply(x)


x = Variable(0.5)
a = square(x)
b = exp(a)
y = square(b)
y.backward(lc.tensor(1.0, dtype=lc.float64))
print(x.grad.item())

x = Variable(0.5)
y = square(exp(square(x)))  # chained calls
y.backward(lc.tensor(1.0, dtype=lc.float64))
print(x.grad.item())

# 9.2 backward() without the initial gradient: it starts from ones_like(y)
x = Variable(0.5)
y = square(exp(square(x)))
y.backward()
print(x.grad.item())

# Lucid's own square and exp do the same
x = Variable(0.5)
y = lc.square(lc.exp(lc.square(x)))
y.backward()
print(x.grad.item())

# 9.3 a 0-d result stays a Tensor (the seed's as_array fix is not needed), with the input's dtype
x = Variable(1.0)
y = x**2
print(type(x).__name__, x.ndim, type(y).__name__, y.dtype)

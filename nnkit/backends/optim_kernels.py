"""In-place optimizer updates over all parameters of a group (``foreach``-style).

Each function takes parallel lists of Mats (parameters, gradients, state buffers) and
writes the update into the parameters' and buffers' own memory with ``out=`` ufuncs,
bumping their versions once. The operations and their order are exactly those of the
per-parameter Tensor formulation they replace (``buf.mul_(m)``, ``addcmul_``, ``lerp_``,
...), so results are bitwise equal to it; a scalar meets an array the way a Tensor op
meets a Python number: cast to the array's dtype (:func:`_s`), except the ``alpha`` of
``add_`` (``iaxpy``), which multiplies as given.
"""

from __future__ import annotations

import math

__all__ = [
    "sgd_step", "adam_step", "rmsprop_step", "adagrad_step", "keras_adam_step",
    "keras_sgd_step", "keras_rmsprop_step", "keras_adagrad_step",
]  # fmt: skip


def _s(value, a):
    """``value`` as a scalar of ``a``'s dtype (how a Tensor op takes a Python number)."""
    return a.dtype.type(value.item() if hasattr(value, "item") else value)


def _a(m):
    """``m``'s array; a 0-d one as a 1-element view, so that ``out=`` works on it (NumPy
    gives scalars, not arrays, for 0-d results)."""
    a = m.array
    return a if a.ndim else a[None]


def _grad(xp, p, g, weight_decay, maximize):
    """The gradient to apply: negated to maximize, plus ``weight_decay * p`` (a new
    array only when one of them is on)."""
    ga = _a(g)
    if maximize:
        ga = xp.negative(ga)
    if weight_decay:
        ga = ga + _a(p) * _s(weight_decay, ga)
    return ga


def sgd_step(params, grads, bufs, *, lr, momentum, dampening, nesterov, weight_decay, maximize):
    """SGD; ``bufs`` (Mats or None) is updated in place: a None slot gets a new buffer."""
    for i, (p, g) in enumerate(zip(params, grads)):
        xp, pa = p.xp, _a(p)
        ga = _grad(xp, p, g, weight_decay, maximize)
        if momentum != 0:
            b = bufs[i]
            if b is None:  # first step, or momentum switched on mid-run
                b = bufs[i] = g._new(ga.reshape(g.shape).copy())
            else:
                ba = _a(b)
                xp.multiply(ba, _s(momentum, ba), out=ba)
                alpha = 1 - dampening
                xp.add(ba, alpha * ga if alpha != 1 else ga, out=ba, casting="unsafe")
                b._written()
            ga = ga + _a(b) * _s(momentum, ga) if nesterov else _a(b)
        xp.add(pa, -lr * ga, out=pa, casting="unsafe")
        p._written()


def adam_step(
    params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, *, lr, betas, eps, weight_decay,
    amsgrad, maximize, decoupled,
):  # fmt: skip
    """Adam (``decoupled``: AdamW's weight decay); ``max_sqs`` is used with ``amsgrad``."""
    beta1, beta2 = betas
    for i, (p, g) in enumerate(zip(params, grads)):
        xp, pa = p.xp, _a(p)
        if decoupled:
            if weight_decay != 0:
                xp.multiply(pa, _s(1 - lr * weight_decay, pa), out=pa)
            ga = _grad(xp, p, g, 0, maximize)
        else:
            ga = _grad(xp, p, g, weight_decay, maximize)
        m, v = _a(exp_avgs[i]), _a(exp_avg_sqs[i])
        t = ga - m  # lerp_: m + (g - m) * (1 - beta1)
        xp.multiply(t, _s(1 - beta1, t), out=t)
        xp.add(m, t, out=m)
        xp.multiply(v, _s(beta2, v), out=v)
        t = xp.multiply(ga, ga, out=t if t.dtype == ga.dtype else None)  # addcmul_
        xp.multiply(t, _s(1 - beta2, t), out=t)
        xp.add(v, t, out=v)
        if amsgrad:
            v = _a(max_sqs[i])
            xp.maximum(v, _a(exp_avg_sqs[i]), out=v)
            max_sqs[i]._written()
        step = steps[i]
        d = xp.sqrt(v)
        xp.true_divide(d, _s(math.sqrt(1 - beta2**step), d), out=d)
        xp.add(d, _s(eps, d), out=d)
        xp.true_divide(m, d, out=d)  # addcdiv_: p + m / d * value
        xp.multiply(d, _s(-lr / (1 - beta1**step), d), out=d)
        xp.add(pa, d, out=pa)
        exp_avgs[i]._written()
        exp_avg_sqs[i]._written()
        p._written()


def rmsprop_step(
    params, grads, square_avgs, grad_avgs, bufs, *, lr, alpha, eps, weight_decay, momentum,
    centered, maximize,
):  # fmt: skip
    """RMSprop; ``grad_avgs`` is used when ``centered``, ``bufs`` when ``momentum > 0``."""
    for i, (p, g) in enumerate(zip(params, grads)):
        xp, pa = p.xp, _a(p)
        ga = _grad(xp, p, g, weight_decay, maximize)
        v = _a(square_avgs[i])
        xp.multiply(v, _s(alpha, v), out=v)
        t = ga * ga  # addcmul_
        xp.multiply(t, _s(1 - alpha, t), out=t)
        xp.add(v, t, out=v)
        square_avgs[i]._written()
        if centered:
            ag = _a(grad_avgs[i])
            xp.subtract(ga, ag, out=t)  # lerp_
            xp.multiply(t, _s(1 - alpha, t), out=t)
            xp.add(ag, t, out=ag)
            grad_avgs[i]._written()
            xp.multiply(ag, ag, out=t)
            xp.subtract(v, t, out=t)
            xp.sqrt(t, out=t)
        else:
            xp.sqrt(v, out=t)
        xp.add(t, _s(eps, t), out=t)
        xp.true_divide(ga, t, out=t)
        if momentum > 0:
            ba = _a(bufs[i])
            xp.multiply(ba, _s(momentum, ba), out=ba)
            xp.multiply(t, _s(1, t), out=t)  # addcdiv_'s value=1
            xp.add(ba, t, out=ba)
            bufs[i]._written()
            xp.add(pa, -lr * ba, out=pa, casting="unsafe")
        else:
            xp.multiply(t, _s(-lr, t), out=t)
            xp.add(pa, t, out=pa)
        p._written()


def adagrad_step(params, grads, sums, steps, *, lr, lr_decay, weight_decay, eps, maximize):
    """Adagrad with ``lr / (1 + (step - 1) * lr_decay)`` as the step's learning rate."""
    for i, (p, g) in enumerate(zip(params, grads)):
        xp, pa = p.xp, _a(p)
        ga = _grad(xp, p, g, weight_decay, maximize)
        clr = lr / (1 + (steps[i] - 1) * lr_decay)
        s = _a(sums[i])
        t = ga * ga  # addcmul_ with value=1
        xp.multiply(t, _s(1, t), out=t)
        xp.add(s, t, out=s)
        sums[i]._written()
        xp.sqrt(s, out=t)
        xp.add(t, _s(eps, t), out=t)
        xp.true_divide(ga, t, out=t)
        xp.multiply(t, _s(-clr, t), out=t)
        xp.add(pa, t, out=pa)
        p._written()


def keras_adam_step(params, grads, ms, vs, v_hats, *, alpha, beta_1, beta_2, epsilon):
    """Keras's Adam (:class:`nnkit.optimizers.Adam`): the operations of its per-variable
    ``update_step`` in order, ``m += (g - m)(1 - b1)``, ``v += (g² - v)(1 - b2)``, with
    ``amsgrad`` (``v_hats`` not None) ``v̂ = max(v̂, v)``, then ``w -= m·alpha /
    (sqrt(v) + eps)``, written in place through two work arrays per variable."""
    for i, (p, g) in enumerate(zip(params, grads)):
        xp, pa, ga = p.xp, _a(p), _a(g)
        m, v = _a(ms[i]), _a(vs[i])
        t = xp.subtract(ga, m)
        xp.multiply(t, _s(1 - beta_1, t), out=t)
        xp.add(m, t, out=m)
        u = xp.multiply(ga, ga)
        xp.subtract(u, v, out=u)
        xp.multiply(u, _s(1 - beta_2, u), out=u)
        xp.add(v, u, out=v)
        ms[i]._written()
        vs[i]._written()
        if v_hats is not None:
            vh = _a(v_hats[i])
            xp.maximum(vh, v, out=vh)
            v_hats[i]._written()
            v = vh
        xp.multiply(m, _s(alpha, m), out=t)
        xp.sqrt(v, out=u)
        xp.add(u, _s(epsilon, u), out=u)
        xp.true_divide(t, u, out=t)
        xp.subtract(pa, t, out=pa)
        p._written()


def keras_sgd_step(params, grads, ms, *, learning_rate, momentum, nesterov):
    """Keras's SGD (:class:`nnkit.optimizers.SGD`), its ``update_step``'s operations in
    order: ``w -= g·lr`` without momentum (``ms`` None), else ``m = m·momentum - g·lr``
    and ``w += m`` (Nesterov: ``w += m·momentum - g·lr``)."""
    for i, (p, g) in enumerate(zip(params, grads)):
        xp, pa, ga = p.xp, _a(p), _a(g)
        u = xp.multiply(ga, _s(learning_rate, ga))
        if ms is None:
            xp.subtract(pa, u, out=pa)
            p._written()
            continue
        m = _a(ms[i])
        t = xp.multiply(m, _s(momentum, m))
        xp.subtract(t, u, out=m)
        ms[i]._written()
        if nesterov:
            xp.multiply(m, _s(momentum, m), out=t)
            xp.subtract(t, u, out=t)
            xp.add(pa, t, out=pa)
        else:
            xp.add(pa, m, out=pa)
        p._written()


def keras_rmsprop_step(
    params, grads, velocities, average_grads, momentums, *, learning_rate, rho, momentum,
    epsilon,
):  # fmt: skip
    """Keras's RMSprop (:class:`nnkit.optimizers.RMSprop`), its ``update_step``'s
    operations in order: ``v = v·rho + g·g·(1 - rho)``; centered (``average_grads`` not
    None) ``a = a·rho + g·(1 - rho)`` and ``d = v - a·a + eps``, else ``d = v + eps``;
    ``inc = g·lr / sqrt(d)``; with ``momentums`` ``p = p·momentum + inc``, ``w -= p``, else
    ``w -= inc``."""
    for i, (p, g) in enumerate(zip(params, grads)):
        xp, pa, ga = p.xp, _a(p), _a(g)
        v = _a(velocities[i])
        t = xp.multiply(v, _s(rho, v))
        u = xp.multiply(ga, ga)
        xp.multiply(u, _s(1 - rho, u), out=u)
        xp.add(t, u, out=v)
        velocities[i]._written()
        if average_grads is not None:
            a = _a(average_grads[i])
            xp.multiply(a, _s(rho, a), out=t)
            xp.multiply(ga, _s(1 - rho, ga), out=u)
            xp.add(t, u, out=a)
            average_grads[i]._written()
            xp.multiply(a, a, out=t)
            xp.subtract(v, t, out=t)
            xp.add(t, _s(epsilon, t), out=t)
        else:
            xp.add(v, _s(epsilon, v), out=t)
        xp.sqrt(t, out=t)
        xp.multiply(ga, _s(learning_rate, ga), out=u)
        xp.true_divide(u, t, out=u)
        if momentums is not None:
            b = _a(momentums[i])
            xp.multiply(b, _s(momentum, b), out=t)
            xp.add(t, u, out=b)
            momentums[i]._written()
            u = b
        xp.subtract(pa, u, out=pa)
        p._written()


def keras_adagrad_step(params, grads, accumulators, *, learning_rate, epsilon):
    """Keras's Adagrad (:class:`nnkit.optimizers.Adagrad`), its ``update_step``'s
    operations in order: ``s += g·g``, ``w -= g·lr / sqrt(s + eps)``."""
    for i, (p, g) in enumerate(zip(params, grads)):
        xp, pa, ga = p.xp, _a(p), _a(g)
        s = _a(accumulators[i])
        u = xp.multiply(ga, ga)
        xp.add(s, u, out=s)
        accumulators[i]._written()
        t = xp.add(s, _s(epsilon, s))
        xp.sqrt(t, out=t)
        xp.multiply(ga, _s(learning_rate, ga), out=u)
        xp.true_divide(u, t, out=u)
        xp.subtract(pa, u, out=pa)
        p._written()

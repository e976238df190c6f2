"""SpatialTransformer: an affine sampling grid made from ``loc`` and a bilinear sampling of ``data`` on it, as
MXNet's spatial_transformer-inl.h (``transform_type='affine'``, ``sampler_type='bilinear'``).

The grid covers the target (h, w) with x, y in [-1, 1] (row-major, x fastest); each (N, 6) row of ``loc`` is a
2x3 matrix taking target points (x, y, 1) to source points, which map to pixels by (g + 1) * (size - 1) / 2.
Samples outside the data are zero. The gradient is two nodes: d data and d grid from the sampler, then d loc
from d grid. Every step is numpy or CuPy through the runtime's array module.
"""
from ... import backend
from ...errors import ConfigError
from ..op import BackwardOp, Op, apply, grad_name, register
from ..params import choice, to_bool, to_shape

SPEC = {"target_shape": (to_shape, (0, 0)), "transform_type": (choice("affine"), "affine"),
        "sampler_type": (choice("bilinear"), "bilinear"), "cudnn_off": (to_bool, False)}


def target_points(xp, height, width, dtype):
    """(3, height * width): MXNet's grid_dst, x then y in [-1, 1] over the target (x fastest), then ones."""
    ys, xs = xp.meshgrid(xp.linspace(-1, 1, height, dtype=dtype), xp.linspace(-1, 1, width, dtype=dtype),
                         indexing="ij")
    return xp.stack([xs.ravel(), ys.ravel(), xp.ones(height * width, dtype=dtype)])


def corners(xp, shape, grid):
    """The four neighbours of each grid point of (N, 2, h, w) ``grid`` in data of ``shape`` (N, C, H, W): a list
    of (spatial index (N, P), validity (N, P), d/dx-weight sign, d/dy-weight sign) plus the fractions (fx, fy)."""
    height, width = shape[2], shape[3]
    n = grid.shape[0]
    x = (grid[:, 0].reshape(n, -1) + 1) * ((width - 1) / 2)
    y = (grid[:, 1].reshape(n, -1) + 1) * ((height - 1) / 2)
    x0, y0 = xp.floor(x), xp.floor(y)
    fx, fy = x - x0, y - y0
    x0, y0 = x0.astype(xp.intp), y0.astype(xp.intp)
    found = []
    for dy in (0, 1):
        for dx in (0, 1):
            yy, xx = y0 + dy, x0 + dx
            valid = (yy >= 0) & (yy < height) & (xx >= 0) & (xx < width)
            index = xp.clip(yy, 0, height - 1) * width + xp.clip(xx, 0, width - 1)
            found.append((index, valid, dx, dy))
    return found, fx, fy


def corner_values(xp, data, found):
    """data at each corner, zero where the corner lies outside: four (N, C, P) arrays."""
    n, c = data.shape[:2]
    flat = data.reshape(n, c, -1)
    rows, channels = xp.arange(n)[:, None, None], xp.arange(c)[None, :, None]
    return [flat[rows, channels, index[:, None, :]] * valid[:, None, :] for index, valid, _, _ in found]


def weights(fx, fy, dx, dy):
    """The bilinear weight of the corner (dx, dy) given the fractions, (N, 1, P)."""
    wx = fx if dx else 1 - fx
    wy = fy if dy else 1 - fy
    return (wx * wy)[:, None, :]


def sample_into(xp, data, grid, out):
    """out[n, c, i, j] = bilinear sample of data[n, c] at grid[n, :, i, j] (zero outside)."""
    found, fx, fy = corners(xp, data.shape, grid)
    values = corner_values(xp, data, found)
    total = sum(v * weights(fx, fy, dx, dy) for v, (_, _, dx, dy) in zip(values, found))
    xp.copyto(out, total.reshape(out.shape))


@register
class SpatialTransformer(Op):
    """MXNet's SpatialTransformer: output (N, C, h, w) sampled bilinearly from data (N, C, H, W) on the affine
    grid of loc (N, 6); target_shape (h, w) defaults to the data's (H, W). The grid is a hidden second output."""
    name, hint = "SpatialTransformer", "spatialtransformer"
    spec = dict(SPEC)
    num_outputs, num_visible = 2, 1
    output_names = ("output", "grid")

    def arguments(self):
        return ["data", "loc"]

    def target(self, data):
        height, width = self.target_shape if len(self.target_shape) == 2 else (0, 0)
        return (height or data[2], width or data[3])

    def setup(self):
        if len(self.target_shape) != 2:
            raise ConfigError("SpatialTransformer: target_shape must be (height, width), got %s"
                              % (self.target_shape,))

    def infer_shape(self, in_shapes):
        data, loc = in_shapes
        if data is None:
            return in_shapes, [None, None], []
        if len(data) != 4:
            raise self.shape_error("data '%s' must be (batch, channel, height, width), got %s",
                                   self.input_name(0), data)
        if loc is not None and tuple(loc) not in ((data[0], 6), (0, 6), (data[0], 0)):
            raise self.shape_error("loc '%s' must be (%d, 6), got %s", self.input_name(1), data[0], loc)
        height, width = self.target(data)
        return [data, (data[0], 6)], [(data[0], data[1], height, width), (data[0], 2, height, width)], []

    def forward(self, rt, ins, outs, aux):
        xp, (data, loc), (out, grid) = rt.xp, ins, outs
        n, _, height, width = out.shape
        points = target_points(xp, height, width, data.dtype)
        xp.copyto(grid, xp.matmul(loc.reshape(n, 2, 3), points).reshape(grid.shape))
        sample_into(xp, data, grid, out)

    def gradient(self, node, out_grads):
        sampler = apply(BilinearSamplingGrad, [out_grads[0], node.inputs[0], (node, 1)],
                        grad_name(node, "sampler"))[0]
        loc = apply(AffineGridGrad, [(sampler, 1)], grad_name(node, "loc"))
        return [(sampler, 0), loc]


@register
class BilinearSamplingGrad(BackwardOp):
    """d data and d grid of a bilinear sampling, from (dy, data, grid), as MXNet's BilinearSamplingBackward."""
    name, hint = "_backward_BilinearSampling", "_backward_bilinearsampling"
    spec = {}
    num_inputs, num_outputs = 3, 2
    output_names = ("data", "grid")

    def output_shapes(self, in_shapes):
        return [in_shapes[1], in_shapes[2]]

    def forward(self, rt, ins, outs, aux):
        xp, (dy, data, grid), (ddata, dgrid) = rt.xp, ins, outs
        n, c, height, width = data.shape
        dy = dy.reshape(n, c, -1)
        found, fx, fy = corners(xp, data.shape, grid)
        values = corner_values(xp, data, found)
        total = xp.zeros(data.size, dtype=ddata.dtype)
        base = (xp.arange(n)[:, None, None] * c + xp.arange(c)[None, :, None]) * (height * width)
        for index, valid, dx, dy_ in found:
            part = dy * weights(fx, fy, dx, dy_) * valid[:, None, :]
            backend.scatter_add(total, (base + index[:, None, :]).ravel(), part.ravel())
        xp.copyto(ddata, total.reshape(ddata.shape))
        v00, v01, v10, v11 = values                         # (dy, dx) = (0,0), (0,1), (1,0), (1,1)
        fxc, fyc = fx[:, None, :], fy[:, None, :]
        d_fx = (dy * ((1 - fyc) * (v01 - v00) + fyc * (v11 - v10))).sum(axis=1)
        d_fy = (dy * ((1 - fxc) * (v10 - v00) + fxc * (v11 - v01))).sum(axis=1)
        xp.copyto(dgrid[:, 0], (d_fx * ((width - 1) / 2)).reshape(dgrid[:, 0].shape))
        xp.copyto(dgrid[:, 1], (d_fy * ((height - 1) / 2)).reshape(dgrid[:, 1].shape))


@register
class AffineGridGrad(BackwardOp):
    """d loc (N, 6) from d grid (N, 2, h, w): d grid times the target points, transposed."""
    name, hint = "_backward_AffineGrid", "_backward_affinegrid"
    spec = {}

    def output_shapes(self, in_shapes):
        grid = in_shapes[0]
        return [None if grid is None else (grid[0], 6)]

    def forward(self, rt, ins, outs, aux):
        xp, dgrid, out = rt.xp, ins[0], outs[0]
        n, _, height, width = dgrid.shape
        points = target_points(xp, height, width, dgrid.dtype)
        xp.copyto(out, xp.matmul(dgrid.reshape(n, 2, -1), points.T).reshape(n, 6))

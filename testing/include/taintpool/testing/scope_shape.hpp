// scope_shape.hpp: the launch every launch-scope figure is quoted for — two
// 4 KiB reads and one 4 KiB write, each a whole buffer on the default stream
// (issue 11, item 7; bench/RESULTS.md).
//
// Why shared: the scope's cost is measured on the host (bench/launch_profile),
// on the GPU (bench/gpu/gpu_bench, stream_bench) and pinned allocation-free
// by the tests (G10); the numbers compare only if every one of them binds the
// same shape, so the shape is written once.
//
// Cost: three create_buffer calls when built; the handles live as long as
// the shape. Header only.
#pragma once

#include <taintpool/device/device.hpp>

#include <array>

namespace taintpool::testing {

/// Three fresh 4 KiB buffers on the default stream of `device`, bound as the
/// scope benchmarks bind them: `reads` = {a, b}, `writes` = {out}, all whole.
struct ScopeShape {
  explicit ScopeShape(Device& device)
      : a(device.create_buffer(4096))
      , b(device.create_buffer(4096))
      , out(device.create_buffer(4096)) {}

  Allocation a;
  Allocation b;
  Allocation out;
  std::array<Binding, 2> reads{a.whole(), b.whole()};
  std::array<Binding, 1> writes{out.whole()};
};

} // namespace taintpool::testing

// pipeline: the example README.md shows — a three-stage float pipeline
// (fill -> matmul -> gelu) on the host backend, in which the weights stage
// fails, the stages downstream are skipped instead of computing on garbage,
// and reading the result prints what a user would see: the root cause and
// the path. Then the weights are repaired with a host write, the two stages
// are relaunched, and the read succeeds.
//
// Why a program and not a snippet: it is registered as a ctest test that
// checks its output (examples/check_output.cmake), so the README's example
// output is the program's real output and cannot silently rot.
#include <taintpool/device/device.hpp>
#include <taintpool/host/host_backend.hpp>

#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

using namespace taintpool;

namespace {

constexpr std::size_t n = 4; // n x n matrices of float
constexpr std::size_t bytes = n * n * sizeof(float);

std::string describe(const char* kernel, const LaunchResult& result) {
  std::string text = std::string(kernel) + ": ";
  switch (result.status) {
  case LaunchStatus::Ran:
    return text + "ran";
  case LaunchStatus::Failed:
    return text + "failed (" + (result.error ? to_string(*result.error) : "") + ")";
  case LaunchStatus::Skipped:
    return text + "skipped, it needed " + to_string(*result.needed) + " (root " +
           to_string(*result.failure) + ")";
  }
  return text;
}

LaunchOutcome fill_x(const KernelContext& k) {
  std::span<float> x = k.write_as<float>(0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = 0.25f * static_cast<float>(i % n) - 0.5f;
  }
  return LaunchOutcome::success();
}

LaunchOutcome matmul(const KernelContext& k) { // h = x * w
  std::span<const float> x = k.read_as<float>(0);
  std::span<const float> w = k.read_as<float>(1);
  std::span<float> h = k.write_as<float>(0);
  for (std::size_t row = 0; row < n; ++row) {
    for (std::size_t col = 0; col < n; ++col) {
      float sum = 0.0f;
      for (std::size_t at = 0; at < n; ++at) {
        sum += x[row * n + at] * w[at * n + col];
      }
      h[row * n + col] = sum;
    }
  }
  return LaunchOutcome::success();
}

LaunchOutcome gelu(const KernelContext& k) { // the tanh approximation
  std::span<const float> h = k.read_as<float>(0);
  std::span<float> y = k.write_as<float>(0);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const float v = h[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  return LaunchOutcome::success();
}

} // namespace

int main() {
  HostBackend host;
  Device device(host);

  Allocation x = device.create_buffer(bytes);
  Allocation w = device.create_buffer(bytes);
  Allocation h = device.create_buffer(bytes);
  Allocation y = device.create_buffer(bytes);

  std::puts("-- run 1: the weights stage fails");
  std::puts(describe("fill_x", device.launch("fill_x", {}, {x.whole()}, fill_x)).c_str());
  const LaunchResult weights =
      device.launch("fill_weights", {}, {w.whole()}, [](const KernelContext&) {
        return LaunchOutcome::failure(Error::out_of_memory("no room for a 64-byte staging buffer"));
      });
  std::puts(describe("fill_weights", weights).c_str());
  std::puts(describe("matmul", device.launch("matmul", {x.whole(), w.whole()}, {h.whole()}, matmul))
                .c_str());
  std::puts(describe("gelu", device.launch("gelu", {h.whole()}, {y.whole()}, gelu)).c_str());

  std::vector<float> result(n * n);
  const std::span<std::byte> out(reinterpret_cast<std::byte*>(result.data()), bytes);
  ReadOutcome read = device.read(y.whole(), out);
  std::puts(read.ok() ? "read: ok (unexpected)" : "read failed:");
  if (!read.ok()) {
    std::puts(to_string(read).c_str());
  }

  std::puts("-- run 2: the weights are written from the host, the stages relaunched");
  std::vector<float> identity_ish(n * n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) {
    identity_ish[i * n + i] = 2.0f;
  }
  const std::span<const std::byte> weight_bytes(
      reinterpret_cast<const std::byte*>(identity_ish.data()), bytes);
  std::puts(describe("host write", device.write(w.whole(), weight_bytes)).c_str());
  std::puts(describe("matmul", device.launch("matmul", {x.whole(), w.whole()}, {h.whole()}, matmul))
                .c_str());
  std::puts(describe("gelu", device.launch("gelu", {h.whole()}, {y.whole()}, gelu)).c_str());
  read = device.read(y.whole(), out);
  if (!read.ok()) {
    std::puts(to_string(read).c_str());
    return 1;
  }
  std::printf("read: ok, y[0][0..3] = %.4f %.4f %.4f %.4f\n", static_cast<double>(result[0]),
              static_cast<double>(result[1]), static_cast<double>(result[2]),
              static_cast<double>(result[3]));
  std::printf("failures left in the graph: %zu\n", device.graph().size());
  return device.graph().empty() ? 0 : 1;
}

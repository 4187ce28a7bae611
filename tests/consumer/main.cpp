// The smallest real use of the installed library: a failure, a skip, and a
// read that reports both. Exits non-zero if any step behaves otherwise.
#include <taintpool/device/device.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/version.hpp>

#include <cstdio>
#include <string>

int main() {
  using namespace taintpool;
  HostBackend host;
  Device device(host);
  Allocation input = device.create_buffer(64);
  Allocation output = device.create_buffer(64);

  device.launch("produce", {}, {input.whole()}, [](const KernelContext&) {
    return LaunchOutcome::failure(Error::launch("injected"));
  });
  const LaunchResult consume =
      device.launch("consume", {input.whole()}, {output.whole()},
                    [](const KernelContext&) { return LaunchOutcome::success(); });
  const std::vector<Report> reports = device.stale_reports(output.whole());
  const std::string text = reports.empty() ? std::string() : to_string(reports.front());

  const bool ok = consume.status == LaunchStatus::Skipped && reports.size() == 1 &&
                  text.find("consume was skipped") != std::string::npos &&
                  text.find("produce: injected") != std::string::npos;
  std::printf("taintpool %s consumer: %s\n%s\n", TAINTPOOL_VERSION_STRING, ok ? "ok" : "FAILED",
              text.c_str());
  return ok ? 0 : 1;
}

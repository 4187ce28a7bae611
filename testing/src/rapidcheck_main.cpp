// The main of every test binary with RapidCheck properties: a GoogleTest
// main that first settles RapidCheck's seed and number of cases, so that a
// random property run is strong enough to catch a bug on every CI run and
// can always be replayed.
//
// RapidCheck reads its configuration from RC_PARAMS once, on first use.
// Before any test runs, this main completes RC_PARAMS:
//   * seed — kept when given (a replay: testing/README.md, and the committed
//     replays of tests/rapidcheck-seeds.txt); otherwise drawn from
//     std::random_device, so every run explores new cases, and written out:
//     a failure's log says how to rerun exactly that run;
//   * max_success — kept when given; otherwise TAINTPOOL_RC_MAX_SUCCESS, or
//     kDefaultMaxSuccess: enough cases per property that a bug the
//     properties can reach shows up in every run rather than in some.
// ctest prints a test's output when it fails, so the seed line is where it
// is needed and nowhere else.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

namespace {

/// Cases per property when nothing says otherwise: ten times RapidCheck's
/// own default of 100. The stateful properties run command sequences of up
/// to RapidCheck's size bound each, so this is thousands of operations per
/// property per run; every property test stays within seconds.
constexpr int kDefaultMaxSuccess = 1000;

bool has_key(const std::string& params, const std::string& key) {
  // RC_PARAMS is "key=value key=value ...".
  std::size_t at = 0;
  while ((at = params.find(key + "=", at)) != std::string::npos) {
    if (at == 0 || params[at - 1] == ' ') {
      return true;
    }
    at += key.size();
  }
  return false;
}

/// RC_PARAMS with a seed and a max_success, logged on stderr.
void settle_rapidcheck_params(const char* program) {
  const char* given = std::getenv("RC_PARAMS");
  std::string params = given != nullptr ? given : "";
  if (!has_key(params, "seed")) {
    std::random_device entropy;
    const std::uint64_t seed = (std::uint64_t{entropy()} << 32) | entropy();
    params += (params.empty() ? "" : " ") + std::string("seed=") + std::to_string(seed);
  }
  if (!has_key(params, "max_success")) {
    const char* wanted = std::getenv("TAINTPOOL_RC_MAX_SUCCESS");
    const std::string cases =
        wanted != nullptr && *wanted != '\0' ? wanted : std::to_string(kDefaultMaxSuccess);
    params += " max_success=" + cases;
  }
  setenv("RC_PARAMS", params.c_str(), 1);
  std::fprintf(stderr,
               "rapidcheck: RC_PARAMS=\"%s\"\n"
               "rapidcheck: to replay this run: RC_PARAMS=\"%s\" %s --gtest_filter=<test>\n",
               params.c_str(), params.c_str(), program);
}

} // namespace

int main(int argc, char** argv) {
  settle_rapidcheck_params(argc > 0 ? argv[0] : "<test binary>");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

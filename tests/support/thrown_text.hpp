// What a call refused with, as text, for tests of bad input (P3): the
// message of the std::invalid_argument it threw, so a test can assert the
// words; "no error" when it returned; "wrong exception: ..." when it threw
// anything else, so a refusal of the wrong kind fails the assertion on the
// words instead of escaping the test. Shared by the pool's adversarial and
// virtual-memory tests.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace taintpool::test {

/// The message of the std::invalid_argument `call` throws (see above).
template <class Call>
std::string invalid_argument_of(Call&& call) {
  try {
    call();
  } catch (const std::invalid_argument& error) {
    return error.what();
  } catch (const std::exception& error) {
    return std::string("wrong exception: ") + error.what();
  }
  return "no error";
}

} // namespace taintpool::test

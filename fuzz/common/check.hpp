// Checker: how a differential fuzzer says "core and the model disagree".
//
// A fuzz crash is only as useful as the message next to it. Every failed
// check here prints, before aborting:
//   * the rule it checks (a DESIGN.md id: T1, G8, R1 ...) and what differed,
//     with the core and the model value side by side;
//   * the context the harness registered — the op index, the op, the ops
//     before it, and both engines' whole observable state.
// Then it aborts (SIGABRT), which libFuzzer reports as a crash and writes the
// reproducer for; the replay driver dies the same way under ctest.
//
// Exceptions thrown by the code under test are not failures by themselves:
// harnesses catch them and compare outcomes (an op must throw in core exactly
// when it throws in the model). Outcome captures that comparison.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "show.hpp"

namespace taintpool::fuzz {

/// How an operation ended, at the grain the contract specifies: a contract
/// violation (std::logic_error and its subclasses other than
/// invalid_argument), a bad argument (std::invalid_argument), an arithmetic
/// overflow (std::overflow_error), out of memory (std::bad_alloc, real or
/// injected: alloc_faults.hpp), or anything else.
enum class Ending {
  returned,
  logic_error,
  invalid_argument,
  overflow_error,
  bad_alloc,
  other_exception
};

inline std::string show(Ending ending) {
  switch (ending) {
  case Ending::returned:
    return "returned";
  case Ending::logic_error:
    return "threw std::logic_error";
  case Ending::invalid_argument:
    return "threw std::invalid_argument";
  case Ending::overflow_error:
    return "threw std::overflow_error";
  case Ending::bad_alloc:
    return "threw std::bad_alloc";
  case Ending::other_exception:
    return "threw something else";
  }
  return "?";
}

struct Outcome {
  Ending ending = Ending::returned;
  /// Why, when the harness states the ending itself (the model's side of a
  /// refusal the model does not throw): a literal, or null.
  const char* note = nullptr;
  /// The exception itself, when one was caught: its message is read only
  /// when a failed check prints it (show). Holding the exception costs a
  /// reference count; copying what() into a string cost an allocation per
  /// throw, and the fuzzers provoke refusals on purpose several times per
  /// input (issue 13, twenty-fourth round).
  std::exception_ptr thrown;

  /// An ending the harness states (no exception behind it), with why.
  [[nodiscard]] static Outcome stated(Ending ending, const char* note = nullptr) noexcept {
    return {ending, note, nullptr};
  }

  [[nodiscard]] bool threw() const noexcept { return ending != Ending::returned; }
  /// The exception's message, or the note; empty when there is neither.
  [[nodiscard]] std::string what() const {
    if (thrown) {
      try {
        std::rethrow_exception(thrown);
      } catch (const std::exception& error) {
        return error.what();
      } catch (...) {
        return "a non-std exception";
      }
    }
    return note != nullptr ? note : "";
  }
  friend bool operator==(const Outcome& a, const Outcome& b) noexcept {
    return a.ending == b.ending; // Messages differ between core and model by design.
  }
};

inline std::string show(const Outcome& outcome) {
  const std::string what = outcome.what();
  return what.empty() ? show(outcome.ending) : show(outcome.ending) + " (" + what + ")";
}

/// Runs `fn`, classifying how it ended. Never lets an exception out.
template <class Fn>
Outcome run_op(Fn&& fn) noexcept {
  try {
    std::forward<Fn>(fn)();
    return {};
  } catch (const std::invalid_argument&) {
    return {Ending::invalid_argument, nullptr, std::current_exception()};
  } catch (const std::overflow_error&) {
    return {Ending::overflow_error, nullptr, std::current_exception()};
  } catch (const std::logic_error&) {
    return {Ending::logic_error, nullptr, std::current_exception()};
  } catch (const std::bad_alloc&) {
    return {Ending::bad_alloc, nullptr, std::current_exception()};
  } catch (...) {
    return {Ending::other_exception, nullptr, std::current_exception()};
  }
}

class Checker {
 public:
  /// Prints the harness's context (op, history, both states) on failure.
  using Context = std::function<std::string()>;

  explicit Checker(std::string target)
      : target_(std::move(target)) {}

  void set_context(Context context) { context_ = std::move(context); }

  /// Prints `[rule] what` and the context, then aborts.
  [[noreturn]] void fail(std::string_view rule, std::string_view what) const noexcept {
    std::string text = "\n==== " + target_ + ": CHECK FAILED [" + std::string(rule) + "] " +
                       std::string(what) + "\n";
    if (context_) {
      try {
        text += context_();
      } catch (...) {
        text += "(the context could not be printed)\n";
      }
    }
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
    std::abort();
  }

  /// Fails with `what` unless `ok`. `what` is a string, or — so that the
  /// passing path, taken millions of times, builds no text — a callable
  /// returning one.
  template <class What>
  void expect(bool ok, std::string_view rule, What&& what) const noexcept {
    if (!ok) [[unlikely]] {
      fail(rule, render(std::forward<What>(what)));
    }
  }

  /// Core and model agree on `what` (a string or a callable, as for
  /// expect), or the check fails showing both.
  template <class What, class T>
  void expect_equal(std::string_view rule, What&& what, const T& core,
                    const T& model) const noexcept {
    if (!(core == model)) [[unlikely]] {
      fail(rule, render(std::forward<What>(what)) + "\n  core:  " + show(core) +
                     "\n  model: " + show(model));
    }
  }

 private:
  template <class What>
  static std::string render(What&& what) {
    if constexpr (std::is_invocable_v<What>) {
      return std::string(std::forward<What>(what)());
    } else {
      return std::string(std::forward<What>(what));
    }
  }

  std::string target_;
  Context context_;
};

} // namespace taintpool::fuzz

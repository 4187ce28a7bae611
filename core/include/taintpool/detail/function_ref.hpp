// FunctionRef<R(Args...)>: a non-owning reference to any callable. Internal.
//
// A launch's body runs before launch() returns, so the device never needs to
// own it. std::function would, and would heap-allocate any lambda that
// captures more than a couple of pointers — on every launch, breaking the
// zero-allocation success path. This is two pointers, built in place: the
// callable's address (or a plain function's pointer) and a thunk.
//
// The referenced callable must outlive the call: pass lambdas directly to
// the function that takes the FunctionRef, never store one.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace taintpool::detail {

template <class Signature>
class FunctionRef;

/// Two pointers, trivially copyable (copies share the referent), never
/// allocates; the callable must outlive every call through it.
template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  /// Any callable object (a lambda, a functor), by address.
  // The requires-clause keeps FunctionRef itself out, so the copy and move
  // constructors are not hidden; clang-tidy 14 does not read requires-clauses.
  // NOLINTBEGIN(bugprone-forwarding-reference-overload)
  template <class Fn>
  requires(!std::is_same_v<std::remove_cvref_t<Fn>, FunctionRef> &&
           !std::is_function_v<std::remove_reference_t<Fn>> &&
           std::is_invocable_r_v<R, Fn&, Args...>) FunctionRef(Fn&& fn)
  noexcept // NOLINT(google-explicit-constructor): used like a function parameter
      : call_([](Target target, Args... args) -> R {
        return std::invoke(*static_cast<std::remove_reference_t<Fn>*>(target.object),
                           std::forward<Args>(args)...);
      }) {
    target_.object = const_cast<void*>(static_cast<const void*>(std::addressof(fn)));
  }
  // NOLINTEND(bugprone-forwarding-reference-overload)

  /// A plain function, by pointer: a function's address is not an object
  /// address, so it cannot travel as a void*.
  FunctionRef(R (*function)(Args...)) noexcept // NOLINT(google-explicit-constructor)
      : call_([](Target target, Args... args) -> R {
        return target.function(std::forward<Args>(args)...);
      }) {
    target_.function = function;
  }

  /// Calls the referenced callable: one indirect call, no allocation.
  R operator()(Args... args) const { return call_(target_, std::forward<Args>(args)...); }

 private:
  union Target {
    void* object;
    R (*function)(Args...);
  };
  Target target_{};
  R (*call_)(Target, Args...);
};

} // namespace taintpool::detail

// FunctionRef<R(Args...)>: a non-owning reference to any callable. Internal.
//
// A launch's body runs before launch() returns, so the device never needs to
// own it. std::function would, and would heap-allocate any lambda that
// captures more than a couple of pointers — on every launch, breaking the
// zero-allocation success path. This is two pointers, built in place.
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

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class Fn>
  requires(!std::is_same_v<std::remove_cvref_t<Fn>, FunctionRef> &&
           std::is_invocable_r_v<R, Fn&, Args...>) FunctionRef(Fn&& fn)
  noexcept // NOLINT(google-explicit-constructor): used like a function parameter
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(fn))))
      , call_([](void* object, Args... args) -> R {
        return std::invoke(*static_cast<std::remove_reference_t<Fn>*>(object),
                           std::forward<Args>(args)...);
      }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

} // namespace taintpool::detail

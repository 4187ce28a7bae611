// planned_body.hpp: the kernel body that does what a model::BodyPlan says,
// and the decoding of a plan from fuzzer bytes — shared by device_fuzzer,
// collective_fuzzer and the device stateful test (review D3/D5); the stream
// rig takes named_bytes() from here for its own queued wrote_only bodies.
//
// Why it exists: DeviceModel::launch predicts a launch from its plan alone
// (which bytes the body writes, how it ends), so every harness that checks a
// Device against the model must run exactly the body the model assumes. Three
// copies of it could drift apart silently; one copy cannot.
//
// The body: it folds every byte it reads into a digest (starting from the
// plan's seed, model::kernel_digest_step), writes every byte of every output
// (model::kernel_output_byte), then ends as the plan says: success, failure
// or partial failure (S2, the plan's written ranges), an exception (S3: a
// std::runtime_error or an int), a check() or a fail_later() on the
// DeferredHostBackend (late failures). A wrote_only plan (S6) writes only
// its valid named ranges, in the order named, and says so; every other byte
// of its outputs keeps what it held (model::DeviceModel::write_named). The
// stream rig runs its own wrote_only bodies, queued in pieces
// (testing/stream_rig.hpp).
//
// The decoding: each fuzzer picks the kind from one byte against its own
// thresholds and its own error tables, so that its committed corpus keeps
// decoding to the plans it always did (PlanDecoding says how; the two
// fuzzers' tables are in their sources).
//
// Cost: the body touches every byte it binds once; the decoder allocates
// only the plan's written ranges. Header-only, no state.
#pragma once

#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/model/device_model.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <vector>

namespace taintpool::testing {

/// The bytes of `context`'s outputs that a wrote_only body's named range
/// covers, or none when the range is untrusted and lies outside its output
/// (S2, S6): the Device ignores such a range, and so must every planned
/// body, here and in the stream rig, for the model's prediction to hold.
inline std::optional<std::span<std::byte>> named_bytes(const KernelContext& context,
                                                       const WrittenRange& written) {
  if (written.output >= context.writes() ||
      written.range.end() > context.write(written.output).size()) {
    return std::nullopt;
  }
  return context.write(written.output)
      .subspan(static_cast<std::size_t>(written.range.begin()),
               static_cast<std::size_t>(written.range.size()));
}

/// Runs `plan` as a kernel body in `context` (see above); `backend` takes
/// check() and fail_later(). What it returns or throws is what
/// model::DeviceModel::launch predicts for the same plan.
inline LaunchOutcome run_planned_body(const model::BodyPlan& plan, const KernelContext& context,
                                      DeferredHostBackend& backend) {
  std::uint32_t digest = plan.seed;
  for (std::size_t index = 0; index < context.reads(); ++index) {
    for (const std::byte byte : context.read(index)) {
      digest = model::kernel_digest_step(digest, static_cast<std::uint8_t>(byte));
    }
  }
  if (plan.kind == model::BodyKind::wrote_only) {
    for (const WrittenRange& written : plan.written) {
      if (const std::optional<std::span<std::byte>> bytes = named_bytes(context, written)) {
        for (std::size_t at = 0; at < bytes->size(); ++at) {
          (*bytes)[at] = static_cast<std::byte>(model::kernel_output_byte(
              digest, plan.seed, written.output, written.range.begin() + at));
        }
      }
    }
    return LaunchOutcome::wrote_only(plan.written);
  }
  for (std::size_t index = 0; index < context.writes(); ++index) {
    const std::span<std::byte> out = context.write(index);
    for (std::size_t position = 0; position < out.size(); ++position) {
      out[position] =
          static_cast<std::byte>(model::kernel_output_byte(digest, plan.seed, index, position));
    }
  }
  switch (plan.kind) {
  case model::BodyKind::succeed:
    return LaunchOutcome::success();
  case model::BodyKind::fail:
    return plan.written.empty() ? LaunchOutcome::failure(plan.error)
                                : LaunchOutcome::partial(plan.error, plan.written);
  case model::BodyKind::throws:
    if (plan.std_exception) {
      throw std::runtime_error(plan.what);
    }
    throw 42;
  case model::BodyKind::check:
    backend.check(context);
    return LaunchOutcome::success();
  case model::BodyKind::fail_late:
    backend.fail_later(context, plan.error, plan.written);
    return LaunchOutcome::success();
  case model::BodyKind::wrote_only: // Returned above.
    break;
  }
  return LaunchOutcome::success();
}

/// How a fuzzer's bytes become a plan (decode_plan). The kind byte is
/// compared with `below` in turn: succeed (or, from `wrote_only_from`,
/// wrote_only), fail, partial fail (S2), throw, check; at or past the last,
/// fail late. An error byte picks
/// `error_kinds[byte % n]` and `messages[(byte / n) % m]`.
struct PlanDecoding {
  std::array<std::uint8_t, 5> below{};
  std::span<const ErrorKind> error_kinds;
  std::span<const char* const> messages;
  /// Written ranges per plan: in.below(max_written + 1).
  std::uint64_t max_written = 2;
  /// S2's untrusted ranges: an output index may be out of range and a
  /// range may reach past its output (each then reads four bytes: output,
  /// shape, begin, length); otherwise every range lies inside an output
  /// (three bytes: output, begin, length; none read without outputs).
  bool untrusted_ranges = false;
  /// A throw's kind byte picks std::runtime_error or an int (bit 0) and
  /// its message (`messages`); otherwise a std::runtime_error("boom").
  bool varied_throws = false;
  /// S6: a kind byte from here up to below[0] is a wrote_only success
  /// (its ranges decoded as a failure's are); the default, 255, leaves
  /// every kind below below[0] a plain success. It takes the top of the
  /// success band, so a decoder without it reads every other kind as before.
  std::uint8_t wrote_only_from = 255;
};

/// A plan read from `in` (a fuzz::ByteReader, or anything with byte() and
/// below(n)) for a launch writing `writes`, as `how` says.
template <class Reader>
model::BodyPlan decode_plan(Reader& in, std::span<const Binding> writes, const PlanDecoding& how) {
  const auto error = [&] {
    const std::uint8_t byte = in.byte();
    const std::size_t kinds = how.error_kinds.size();
    return Error(how.error_kinds[byte % kinds], how.messages[(byte / kinds) % how.messages.size()]);
  };
  const auto written = [&] {
    std::vector<WrittenRange> ranges;
    const std::uint64_t count = in.below(how.max_written + 1);
    ranges.reserve(count); // One allocation, not one per growth (issue 13).
    for (std::uint64_t index = 0; index < count; ++index) {
      if (!how.untrusted_ranges) {
        if (writes.empty()) {
          break;
        }
        const auto output = static_cast<std::uint32_t>(in.byte() % writes.size());
        const std::uint64_t size = writes[output].range.size();
        const std::uint64_t begin = in.byte() % (size + 1);
        ranges.push_back(
            WrittenRange{output, ByteRange::sized(begin, in.byte() % (size - begin + 1))});
        continue;
      }
      const std::uint8_t pick = in.byte();
      const auto output = static_cast<std::uint32_t>(
          pick < 224 && !writes.empty() ? pick % writes.size() : writes.size() + (pick % 2));
      const std::uint64_t size = output < writes.size() ? writes[output].range.size() : 8;
      const std::uint8_t shape = in.byte();
      const std::uint64_t begin = in.byte() % (size + 1);
      const std::uint64_t length = in.byte() % (size - begin + 1);
      // S2: ranges are untrusted; some reach past their output.
      const std::uint64_t end = shape < 224 ? begin + length : size + 1 + (shape % 3);
      ranges.push_back(WrittenRange{output, ByteRange::of(std::min(begin, end), end)});
    }
    return ranges;
  };
  model::BodyPlan plan;
  const std::uint8_t kind = in.byte();
  plan.seed = in.byte();
  if (kind >= how.wrote_only_from && kind < how.below[0]) {
    plan.kind = model::BodyKind::wrote_only;
    plan.written = written();
  } else if (kind < how.below[0]) {
    plan.kind = model::BodyKind::succeed;
  } else if (kind < how.below[1]) {
    plan.kind = model::BodyKind::fail;
    plan.error = error();
  } else if (kind < how.below[2]) {
    plan.kind = model::BodyKind::fail; // Partial (S2).
    plan.error = error();
    plan.written = written();
  } else if (kind < how.below[3]) {
    plan.kind = model::BodyKind::throws;
    if (how.varied_throws) {
      plan.std_exception = (kind & 1) == 0;
      plan.what = how.messages[(kind >> 1) % how.messages.size()];
    }
  } else if (kind < how.below[4]) {
    plan.kind = model::BodyKind::check;
  } else {
    plan.kind = model::BodyKind::fail_late;
    plan.error = error();
    plan.written = written();
  }
  return plan;
}

} // namespace taintpool::testing

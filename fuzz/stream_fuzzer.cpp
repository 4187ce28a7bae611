// stream_fuzzer: a Device with several streams on a DeferredHostBackend,
// whose queues run in a random interleaving the waits allow, against the
// ordering oracle (model::StreamModel) and the D1 oracle (model::DeviceModel)
// side by side — O1-O4 (proposed stream rules), S1-S6, D1, P1/P3, R1-R4.
//
// Why a target of its own: device_fuzzer compares whole dataflows on one
// stream at full depth; this one spends its time on what streams add —
// which work waits for which, what may run in between, when memory may
// change hands — and is built for speed (issue 13: >= 5 000 exec/s under
// ASan+UBSan): short inputs, what an op touched checked after it, the whole
// state every few ops and at the end, and no text built unless a check
// fails.
//
// # What is checked
//
// Everything testing/include/taintpool/testing/stream_rig.hpp lists, after every op: waits needed
// and single per source (O2) or absent (O4); no unordered conflicting access
// once a launch's waits are queued (O1); items running in an order the
// program allows, and bytes equal to the sequential program's (O1) or
// carrying a Race failure (O4); memory handed out, and pages given back,
// free of other streams' work (O3); pins and stats exactly; results, ids,
// claims, reports and bytes as DeviceModel says (S1-S6, D1, G1-G9, P1, P3);
// check_invariants and the whole state every few ops; R4 at the end.
//
// # How the input is decoded (ByteReader: past the end, bytes read as 0)
//
// Byte 0: bit 0 detect mode. Bytes 1-2: the scheduler's seed. Then ops, at
// most kMaxOps, each an op byte (low 4 bits the op, high 4 bits a parameter:
// a slot, a step count, which stream to destroy) and its operands:
//   create       size byte, stream byte
//   launch       kernel byte, stream byte, counts byte (reads 0-2, writes
//                0-2, in-place flag, bit 7: through a LaunchPlan made for
//                it), bindings, plan (kind byte, seed byte,
//                written ranges for a partial failure, wrote_only or late
//                failure)
//   binding      target byte (a slot, else an id made before: maybe
//                dropped), shape byte (whole, inside, past the end), two bytes
//   host write   stream byte, binding, seed byte
//   read         stream byte, binding, flags byte (stale_reports, wrong size)
//   step         1-8 scheduler steps
//   streams      create, or destroy (the parameter picks; the default is
//                refused)
//   synchronize, sweep / cleanup, drop
// A stream byte picks a live stream; from 250 up a destroyed one or one of
// no device (P3).
#include <taintpool/model/device_model.hpp>
#include <taintpool/testing/stream_rig.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/byte_reader.hpp"
#include "common/check.hpp"

namespace {

using taintpool::AllocationId;
using taintpool::Binding;
using taintpool::ByteRange;
using taintpool::Error;
using taintpool::WrittenRange;
using taintpool::fuzz::ByteReader;
using taintpool::fuzz::Checker;
using taintpool::model::BodyKind;
using taintpool::model::BodyPlan;
using taintpool::testing::StreamRig;

constexpr std::size_t kMaxOps = 32;

constexpr std::array<const char*, 3> kKernels = {"fill", "mix", "copy"};

enum class Op : std::uint8_t {
  create,
  drop,
  launch,
  write,
  read,
  step,
  streams,
  synchronize,
  sweep
};

constexpr std::array<Op, 16> kOpTable = {
    Op::create,  Op::create, Op::drop,  Op::launch,      Op::launch, Op::launch,
    Op::launch,  Op::write,  Op::read,  Op::step,        Op::step,   Op::step,
    Op::streams, Op::launch, Op::sweep, Op::synchronize,
};

Binding decode_binding(ByteReader& in, const StreamRig& rig) {
  const std::uint8_t target = in.byte();
  std::optional<AllocationId> id;
  if (target < 240) {
    for (std::size_t step = 0; step < StreamRig::kSlots && !id; ++step) {
      if (const auto& held = rig.slot((target + step) % StreamRig::kSlots)) {
        id = held.id();
      }
    }
  }
  if (!id) {
    id = rig.made().empty() ? AllocationId::from_raw(1)
                            : rig.made()[target % rig.made().size()]; // Maybe dropped (P3).
  }
  const std::uint64_t size = rig.model().size(*id);
  const std::uint8_t shape = in.byte();
  const std::uint64_t a = in.byte();
  const std::uint64_t b = in.byte();
  if (shape < 96) {
    return Binding{*id, ByteRange::sized(0, size)};
  }
  if (shape < 250) {
    const std::uint64_t begin = a % (size + 1);
    return Binding{*id, ByteRange::sized(begin, b % (size - begin + 1))};
  }
  return Binding{*id, ByteRange::of(std::min(a % (size + 1), size + 1), size + 1)}; // P3.
}

void decode_written(ByteReader& in, const std::vector<Binding>& writes,
                    std::vector<WrittenRange>& written) {
  written.clear();
  const std::uint64_t count = in.below(3);
  for (std::uint64_t at = 0; at < count; ++at) {
    const std::uint8_t pick = in.byte();
    const auto output = static_cast<std::uint32_t>(
        pick < 240 && !writes.empty() ? pick % writes.size() : writes.size()); // Maybe none (S2).
    const std::uint64_t size = output < writes.size() ? writes[output].range.size() : 4;
    const std::uint64_t begin = in.byte() % (size + 1);
    const std::uint64_t length = in.byte() % (size - begin + 2); // May reach 1 past: ignored.
    written.push_back(WrittenRange{output, ByteRange::sized(begin, length)});
  }
}

/// Decodes into `plan`, kept across ops (its written list keeps its
/// capacity); every field a fresh plan would hold is set again.
void decode_plan(ByteReader& in, const std::vector<Binding>& writes, BodyPlan& plan) {
  plan.written.clear();
  plan.error = Error::launch("");
  const std::uint8_t kind = in.byte();
  plan.seed = in.byte();
  if (kind < 144) {
    plan.kind = BodyKind::succeed;
  } else if (kind < 168) {
    plan.kind = BodyKind::fail;
    plan.error = Error::launch("boom");
  } else if (kind < 192) {
    plan.kind = BodyKind::fail; // Partial (S2); its error set above.
    decode_written(in, writes, plan.written);
  } else if (kind < 200) {
    plan.kind = BodyKind::throws;
  } else if (kind < 224) {
    plan.kind = BodyKind::wrote_only; // S6.
    decode_written(in, writes, plan.written);
  } else if (kind < 240) {
    plan.kind = BodyKind::check;
  } else {
    plan.kind = BodyKind::fail_late;
    plan.error = Error::launch("late");
    decode_written(in, writes, plan.written);
  }
}

/// What a launch op decodes into, kept across ops and inputs: three
/// vectors built per launch, each an allocation ASan pays a stack trace,
/// a fill and a quarantine slot for (issue 13, twenty-seventh round).
/// Every op sets what it uses afresh; no decoding reads what an earlier
/// op left.
struct Decoded {
  std::vector<Binding> reads;
  std::vector<Binding> writes;
  BodyPlan plan;
};

Decoded& decoded() {
  static Decoded kept;
  return kept;
}

void one_op(ByteReader& in, StreamRig& rig) {
  const std::uint8_t op = in.byte();
  const auto parameter = static_cast<std::uint8_t>(op >> 4);
  switch (kOpTable[op & 15u]) {
  case Op::create: {
    const std::uint8_t byte = in.byte();
    // Mostly small (sliced pools), some mid-size, some exclusive pages.
    const std::uint64_t size = byte < 176   ? byte % 49
                               : byte < 240 ? 64 + byte % 192
                                            : 300 + (byte % 16) * 40;
    rig.create(parameter % StreamRig::kSlots, size, rig.stream(in.byte()));
    break;
  }
  case Op::drop:
    rig.drop(parameter % StreamRig::kSlots);
    break;
  case Op::launch: {
    const std::string kernel = kKernels[in.byte() % kKernels.size()];
    const auto stream = rig.stream(in.byte());
    const std::uint8_t counts = in.byte();
    std::vector<Binding>& reads = decoded().reads;
    std::vector<Binding>& writes = decoded().writes;
    reads.clear();
    writes.clear();
    for (unsigned at = 0; at < (counts & 3u) % 3; ++at) {
      reads.push_back(decode_binding(in, rig));
    }
    for (unsigned at = 0; at < ((counts >> 2) & 3u) % 3; ++at) {
      writes.push_back(decode_binding(in, rig));
    }
    if ((counts & 0x10u) != 0 && !reads.empty()) {
      writes.push_back(reads[in.below(reads.size())]); // In place (S5).
    }
    // Bit 7 of the counts byte: the same launch through a LaunchPlan made
    // for it (issue 11, item 7), whose answers must be the plain launch's.
    BodyPlan& plan = decoded().plan;
    decode_plan(in, writes, plan);
    rig.launch(kernel, stream, reads, writes, plan, (counts & 0x80u) != 0);
    break;
  }
  case Op::write: {
    const auto stream = rig.stream(in.byte());
    const Binding into = decode_binding(in, rig);
    rig.write(stream, into, in.byte());
    break;
  }
  case Op::read: {
    const auto stream = rig.stream(in.byte());
    const Binding from = decode_binding(in, rig);
    rig.read(stream, from, in.byte());
    break;
  }
  case Op::step:
    rig.step(1 + parameter % 8);
    break;
  case Op::streams:
    if ((parameter & 8u) != 0) {
      rig.destroy_stream(parameter & 7u);
    } else {
      rig.create_stream();
    }
    break;
  case Op::synchronize:
    rig.synchronize();
    break;
  case Op::sweep:
    rig.sweep((parameter & 1u) != 0);
    break;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  const bool detect = (in.byte() & 1u) != 0;
  const std::uint64_t seed = in.bytes(2);
  // A rig per input (fuzz/ROUNDS.md, rounds 49 and 52): a rig kept across
  // inputs let an input that grew a kept list end with more mallocs than
  // frees, and libFuzzer answers each such input with a re-run and a leak
  // scan of the whole heap, which halved the campaign's speed.
  const Checker checker("stream_fuzzer");
  StreamRig rig(detect, seed, [&checker](std::string_view rule, const std::string& what) {
    checker.fail(rule, what);
  });
  while (!in.empty() && rig.ops() < kMaxOps) {
    one_op(in, rig);
    rig.after_op();
  }
  rig.finish();
  return 0;
}

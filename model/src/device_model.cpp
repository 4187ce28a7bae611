// The device model's operations, one byte at a time. See device_model.hpp
// for the rules in words; every loop here is over bytes or over the launches
// since the last synchronize, and nothing is cached between operations
// except the bytes themselves and two things kept in step with them where
// they change: each allocation's owners list and the list of allocations
// held (a whole-state comparison derives the owners lists again to check).
#include <taintpool/device/device.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/model/device_model.hpp>
#include <taintpool/taint.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <initializer_list>
#include <map>
#include <memory>
#include <memory_resource>
#include <span>
#include <stdexcept>

// AddressSanitizer's interface, where the build has it: the per-byte lists'
// redzones (ByteBlocks below). g++ says so with __SANITIZE_ADDRESS__,
// clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define TAINTPOOL_MODEL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TAINTPOOL_MODEL_ASAN 1
#endif
#endif
#ifdef TAINTPOOL_MODEL_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace taintpool::model {

namespace {

/// Room a model's per-allocation and per-launch lists take at their first
/// entry. Grown by doubling from one, each had reallocated (moving every
/// entry's own vectors) five times by its sixteenth entry — and a model
/// is built new for every fuzzer input (issue 13). Capacity only: what the
/// lists hold, and so every answer, is unchanged.
constexpr std::size_t kFirstRoom = 16;

/// The first block of the model's per-byte lists (DeviceModel::ByteArena):
/// an allocation takes ten bytes a byte (a writer and a value), so about
/// four hundred bytes of allocations fit before a second, larger block.
constexpr std::size_t kFirstBytes = 4096;

/// Room the log's kernel names take at the first entry: a collective's
/// name ("all_gather(grads) on rank 1") is some 25 characters, so about
/// twenty of them before the first reallocation.
constexpr std::size_t kFirstText = 512;

/// The blocks ByteBlocks' monotonic resource takes from the heap, kept
/// when it gives them back (at DeviceModel::take_room, through
/// ByteArena::release): a later request of the same size and alignment —
/// the next model's first blocks, as a monotonic resource asks the same
/// sizes again after a release — gets one back instead of the heap. Why:
/// those blocks were some 13 KB and two to three mallocs per device_fuzzer
/// input, fresh memory each time (issue 13, forty-seventh round). What it
/// costs: up to kKept blocks (kKeptBytes) stay allocated while no model
/// uses them. Under ASan a kept block is poisoned whole until handed out
/// again, so a stale read into an ended model's lists is still reported
/// until another model's lists reuse those bytes.
class KeptBlocks final : public std::pmr::memory_resource {
 public:
  KeptBlocks() = default;
  KeptBlocks(const KeptBlocks&) = delete;
  KeptBlocks& operator=(const KeptBlocks&) = delete;
  KeptBlocks(KeptBlocks&&) = delete;
  KeptBlocks& operator=(KeptBlocks&&) = delete;
  ~KeptBlocks() override {
    for (std::size_t at = 0; at < count_; ++at) {
#ifdef TAINTPOOL_MODEL_ASAN
      ASAN_UNPOISON_MEMORY_REGION(kept_[at].at, kept_[at].bytes);
#endif
      std::pmr::new_delete_resource()->deallocate(kept_[at].at, kept_[at].bytes,
                                                  kept_[at].alignment);
    }
  }

 private:
  static constexpr std::size_t kKept = 8;
  static constexpr std::size_t kKeptBytes = 256 * 1024;
  struct Block {
    void* at = nullptr;
    std::size_t bytes = 0;
    std::size_t alignment = 0;
  };

  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    for (std::size_t at = 0; at < count_; ++at) {
      if (kept_[at].bytes == bytes && kept_[at].alignment == alignment) {
        void* const block = kept_[at].at;
        kept_bytes_ -= bytes;
        kept_[at] = kept_[--count_];
#ifdef TAINTPOOL_MODEL_ASAN
        ASAN_UNPOISON_MEMORY_REGION(block, bytes);
#endif
        return block;
      }
    }
    return std::pmr::new_delete_resource()->allocate(bytes, alignment);
  }
  void do_deallocate(void* block, std::size_t bytes, std::size_t alignment) override {
    if (count_ < kKept && kept_bytes_ + bytes <= kKeptBytes) {
      kept_[count_++] = Block{block, bytes, alignment};
      kept_bytes_ += bytes;
#ifdef TAINTPOOL_MODEL_ASAN
      ASAN_POISON_MEMORY_REGION(block, bytes);
#endif
      return;
    }
    std::pmr::new_delete_resource()->deallocate(block, bytes, alignment);
  }
  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  std::array<Block, kKept> kept_{};
  std::size_t count_ = 0;
  std::size_t kept_bytes_ = 0;
};

/// DeviceModel::ByteArena's resource: a monotonic one (blocks taken once,
/// given back with the model), and under AddressSanitizer a poisoned
/// redzone after each list it hands out and each list poisoned once given
/// back, so a read or write past one allocation's list into the next
/// one's, or into a list already given back, is reported as it was when
/// each list was a heap chunk of its own.
class ByteBlocks final : public std::pmr::memory_resource {
 public:
  ByteBlocks()
      : blocks_(kFirstBytes, &kept_) {}

  /// Every list given back at once (none may be in use): the blocks go to
  /// kept_, and the resource starts again as a new one, asking the same
  /// block sizes again (DeviceModel::take_room).
  void release() noexcept { blocks_.release(); }

 private:
#ifdef TAINTPOOL_MODEL_ASAN
  static constexpr std::size_t kRedzone = 16;
  /// The bytes taken for a list of `bytes`: rounded up to ASan's 8-byte
  /// granule, then the redzone.
  static std::size_t padded(std::size_t bytes) noexcept {
    return (bytes + 7) / 8 * 8 + kRedzone;
  }
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    const std::size_t taken = padded(bytes);
    auto* list = static_cast<char*>(blocks_.allocate(taken, std::max<std::size_t>(alignment, 8)));
    ASAN_POISON_MEMORY_REGION(list + bytes, taken - bytes);
    return list;
  }
  /// A list given back is poisoned whole: the monotonic resource never
  /// hands its bytes out again, so a read through a stale pointer into an
  /// ended allocation's list is reported, as a freed heap chunk was.
  void do_deallocate(void* list, std::size_t bytes, std::size_t alignment) override {
    ASAN_POISON_MEMORY_REGION(list, padded(bytes));
    blocks_.deallocate(list, padded(bytes), std::max<std::size_t>(alignment, 8));
  }
#else
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    return blocks_.allocate(bytes, alignment);
  }
  void do_deallocate(void* list, std::size_t bytes, std::size_t alignment) override {
    blocks_.deallocate(list, bytes, alignment);
  }
#endif
  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  KeptBlocks kept_; ///< Declared first: blocks_ gives its blocks back to it as it goes.
  std::pmr::monotonic_buffer_resource blocks_;
};

template <class T>
void reserve_first(std::vector<T>& list) {
  if (list.capacity() == 0) {
    list.reserve(kFirstRoom);
  }
}

} // namespace

Error named_error(std::string_view kernel, const Error& error, std::size_t ignored_ranges,
                  std::string_view suffix) {
  // One string, sized for the whole text before anything is appended:
  // built piece by piece (and a late failure's suffix added to a copy) it
  // took two to five allocations per failed launch or late failure, each
  // paying ASan's stack trace in the fuzzers, which fail launches on
  // purpose (issue 13). The words are unchanged.
  constexpr std::string_view ignored_head = " (";
  constexpr std::string_view ignored_tail =
      " reported written ranges lay outside their outputs and were ignored)";
  const std::string_view what =
      error.message().empty() ? name(error.kind()) : std::string_view(error.message());
  // The count's digits, as std::to_string writes them, without a string.
  std::array<char, 24> digits{};
  std::size_t count_size = 0;
  if (ignored_ranges != 0) {
    count_size = static_cast<std::size_t>(
        std::to_chars(digits.data(), digits.data() + digits.size(), ignored_ranges).ptr -
        digits.data());
  }
  std::string message;
  message.reserve(
      kernel.size() + 2 + what.size() + suffix.size() +
      (ignored_ranges != 0 ? ignored_head.size() + count_size + ignored_tail.size() : 0));
  message.append(kernel).append(": ").append(what);
  if (ignored_ranges != 0) {
    message.append(ignored_head)
        .append(std::string_view(digits.data(), count_size))
        .append(ignored_tail);
  }
  message.append(suffix);
  return Error(error.kind(), std::move(message));
}

// ------------------------------------------------------------ a model's room

DeviceModel::DeviceModel(bool detect, Room room)
    : detect_(detect) {
  // Only capacity comes from the room: every list is emptied once taken
  // (spare_launch_'s, spare_read_'s and the spare owners lists when they
  // are used), so the model starts as DeviceModel(detect) does.
  trade_lists(room);
  empty_lists();
  spare_owners_ = std::move(room.owners);
}

DeviceModel::Room DeviceModel::take_room() noexcept {
  Room room;
  // The allocations' owners lists as spares, emptied, while the spare list
  // has room: made once (the first Room), never grown.
  room.owners = std::move(spare_owners_);
  try {
    room.owners.reserve(kSpareOwners);
  } catch (const std::bad_alloc&) {
    // No more spares then: the next model grows those lists as a fresh one.
  }
  for (Allocation& allocation : allocations_) {
    if (room.owners.size() == room.owners.capacity()) {
      break;
    }
    if (allocation.owners.capacity() != 0) {
      allocation.owners.clear();
      room.owners.push_back(std::move(allocation.owners));
    }
  }
  // Topped up to kSpareOwners at once (the first Room only, in practice):
  // grown a few per input instead, the heap a model leaves behind would
  // grow input after input, and libFuzzer runs an input again, with a leak
  // check, whenever its mallocs and frees differ (issue 13).
  try {
    while (room.owners.size() < room.owners.capacity()) {
      std::vector<std::uint64_t> spare;
      spare.reserve(kFirstOwners);
      room.owners.push_back(std::move(spare));
    }
  } catch (const std::bad_alloc&) {
    // Fewer spares then: a model grows the rest as a fresh one does.
  }
  empty_lists();    // The allocations' per-byte lists go back to bytes_…
  bytes_.release(); // …and its blocks are kept for the next model.
  trade_lists(room);
  return room;
}

void DeviceModel::trade_lists(Room& room) noexcept {
  using std::swap;
  swap(bytes_, room.bytes);
  swap(allocations_, room.allocations);
  swap(held_, room.held);
  failures_.trade_room(room.failures);
  swap(log_, room.log);
  swap(log_bindings_, room.log_bindings);
  swap(log_text_, room.log_text);
  swap(late_, room.late);
  swap(checked_, room.checked);
  swap(pending_exchanges_, room.pending_exchanges);
  swap(scratch_ids_, room.scratch_ids);
  swap(scratch_carriers_, room.scratch_carriers);
  swap(scratch_owners_, room.scratch_owners);
  swap(scratch_bytes_, room.scratch_bytes);
  swap(scratch_named_, room.scratch_named);
  swap(scratch_read_owners_, room.scratch_read_owners);
  swap(scratch_released_, room.scratch_released);
  swap(scratch_steps_, room.scratch_steps);
  swap(spare_launch_, room.launch);
  swap(spare_read_, room.read);
}

void DeviceModel::empty_lists() noexcept {
  allocations_.clear();
  held_.clear();
  failures_.erase_if([](std::uint64_t, const Failure&) { return true; });
  log_.clear();
  log_bindings_.clear();
  log_text_.clear();
  late_.clear();
  checked_.clear();
  pending_exchanges_.clear();
  scratch_ids_.clear();
  scratch_carriers_.clear();
  scratch_owners_.clear();
  scratch_bytes_.clear();
  scratch_named_.clear();
  scratch_read_owners_.clear();
  scratch_released_.clear();
  scratch_steps_.clear();
}

void DeviceModel::recycle(ModelRead&& done) noexcept {
  spare_read_.binding_errors = emptied(done.binding_errors);
  spare_read_.reports = emptied(done.reports);
  spare_read_.bytes = emptied(done.bytes);
}

ModelRead DeviceModel::fresh_read() noexcept {
  ModelRead out;
  out.binding_errors = emptied(spare_read_.binding_errors);
  out.reports = emptied(spare_read_.reports);
  out.bytes = emptied(spare_read_.bytes);
  return out;
}

void DeviceModel::recycle(ModelLaunch&& done) noexcept {
  spare_launch_.binding_errors = emptied(done.binding_errors);
  spare_launch_.acceptable_roots = emptied(done.acceptable_roots);
  spare_launch_.race_wording = emptied(done.race_wording);
  spare_launch_.result.unwritten = emptied(done.result.unwritten);
}

ModelLaunch DeviceModel::fresh_launch() noexcept {
  ModelLaunch out;
  out.binding_errors = emptied(spare_launch_.binding_errors);
  out.acceptable_roots = emptied(spare_launch_.acceptable_roots);
  out.race_wording = emptied(spare_launch_.race_wording);
  out.result.unwritten = emptied(spare_launch_.result.unwritten);
  return out;
}

// ------------------------------------------------------------ allocations

const DeviceModel::Allocation* DeviceModel::find(AllocationId allocation) const {
  if (allocation_space(allocation) != space_ || index_of(allocation) >= allocations_.size()) {
    return nullptr;
  }
  return &allocations_[index_of(allocation)];
}

DeviceModel::Allocation* DeviceModel::find(AllocationId allocation) {
  if (allocation_space(allocation) != space_ || index_of(allocation) >= allocations_.size()) {
    return nullptr;
  }
  return &allocations_[index_of(allocation)];
}

void DeviceModel::ByteArena::release() noexcept {
  if (resource_) {
    static_cast<ByteBlocks*>(resource_.get())->release(); // get() makes only ByteBlocks.
  }
}

std::pmr::memory_resource* DeviceModel::ByteArena::get() {
  if (!resource_) {
    resource_ = std::make_unique<ByteBlocks>();
  }
  return resource_.get();
}

AllocationId DeviceModel::create(std::uint64_t size) {
  discover();
  std::uint64_t writer = 0; // Fresh memory counts as written (D1)…
  if (fresh_ == FreshBytes::NeverWritten && size != 0) {
    // …unless it is never-written (N1): one failure for every such byte.
    if (!never_written_failure()) {
      never_written_ = mint(Error::never_written());
    }
    writer = never_written_;
  }
  // Each list made in place with the arena's allocator (a list assigned
  // from another would keep the default one). No value is known yet,
  // whatever bytes the memory holds.
  Allocation fresh{size,
                   1,
                   State::live,
                   std::pmr::vector<std::uint64_t>(size, writer, bytes_.get()),
                   std::pmr::vector<std::optional<std::uint8_t>>(size, std::nullopt, bytes_.get()),
                   {},
                   false,
                   0};
  if (!spare_owners_.empty()) {
    // A Room's spare (emptied when kept): its capacity, nothing else.
    fresh.owners = std::move(spare_owners_.back());
    spare_owners_.pop_back();
    fresh.owners.clear();
  }
  reserve_first(allocations_);
  reserve_first(held_);
  allocations_.push_back(std::move(fresh));
  held_.push_back(allocations_.size() - 1);
  return id_at(allocations_.size() - 1);
}

AllocationId DeviceModel::create(std::span<const std::byte> bytes) {
  const AllocationId id = create(bytes.size());
  // The verdict goes back for its room (recycle()): dropped, it took the
  // room the caller's last verdict handed back.
  recycle(write(Binding{id, ByteRange::sized(0, bytes.size())}, bytes));
  return id;
}

void DeviceModel::copy_handle(AllocationId allocation) {
  Allocation* found = find(allocation);
  if (found == nullptr || found->state != State::live) {
    throw std::logic_error("model: a copy of a handle of " + to_string(allocation) +
                           ", which has none");
  }
  ++found->handles;
}

void DeviceModel::drop_handle(AllocationId allocation) {
  Allocation* found = find(allocation);
  if (found == nullptr || found->state != State::live || found->handles == 0) {
    throw std::logic_error("model: a drop of a handle of " + to_string(allocation) +
                           ", which has none");
  }
  if (--found->handles == 0) {
    found->state = State::dropped;
    ++dropped_count_;
  }
}

void DeviceModel::sweep() {
  discover();
}

void DeviceModel::discover() {
  // Every launch, create and read discovers first, and most find nothing
  // dropped: the count (drop_handle's) skips the walk then (issue 13).
  if (dropped_count_ == 0) {
    return;
  }
  for (const std::size_t index : held_) {
    Allocation& allocation = allocations_[index];
    if (allocation.state == State::dropped) {
      // P1: the allocation has ended for good; its stale bytes go with it.
      allocation.state = State::gone;
      writers_to_change(allocation).clear();
      allocation.value.clear();
    }
  }
  held_.erase(
      std::remove_if(held_.begin(), held_.end(),
                     [&](std::size_t index) { return allocations_[index].state == State::gone; }),
      held_.end());
  dropped_count_ = 0;
  bury();
}

std::optional<ErrorKind> DeviceModel::check(const Binding& binding) const {
  const Allocation* found = find(binding.allocation);
  if (found == nullptr || found->state != State::live) {
    return ErrorKind::NotFound;
  }
  if (binding.range.end() > found->size) {
    return ErrorKind::InvalidBinding;
  }
  return std::nullopt;
}

// ------------------------------------------------------------ failures

std::uint64_t DeviceModel::mint(Error error) {
  const std::uint64_t id = next_failure_++;
  failures_.emplace(id, Failure{std::move(error), {}});
  return id;
}

void DeviceModel::bury() {
  // Every failure some byte names: the union of the allocations' owners
  // lists, each derived again only if a write changed its bytes since (this
  // runs after every launch). The lists are sorted and hold a handful each,
  // so they are merged into `named` (sorted, distinct) entry by entry: the
  // append, sort and unique this was cost a sort per launch (issue 13).
  std::vector<std::uint64_t>& named = scratch_named_;
  named.clear();
  for (const std::size_t index : held_) {
    for (const std::uint64_t owner : owners_of(allocations_[index])) {
      insert_sorted(named, owner);
    }
  }
  failures_.erase_if([&](std::uint64_t id, const Failure&) {
    return !std::binary_search(named.begin(), named.end(), id);
  });
}

void DeviceModel::insert_sorted(std::vector<std::uint64_t>& list, std::uint64_t value) {
  // From the back: owners are minted in ascending order, so a new one most
  // often belongs at the end.
  std::size_t at = list.size();
  while (at != 0 && list[at - 1] > value) {
    --at;
  }
  if (at != 0 && list[at - 1] == value) {
    return;
  }
  // Room for a handful at the first entry: grown from one, an allocation's
  // owners list and bury's union regrew twice or three times per model,
  // each an allocation ASan pays for (a model per fuzzer input).
  if (list.capacity() == 0) {
    list.reserve(kFirstOwners);
  }
  list.insert(list.begin() + static_cast<std::ptrdiff_t>(at), value);
}

void DeviceModel::derive_owners(const Allocation& allocation, std::vector<std::uint64_t>& out) {
  // Runs of one writer are listed once, each into its sorted place. Through
  // a plain pointer: the vector's iterators were a call per byte in the
  // fuzz build (-O1), where this runs after every write (issue 13).
  out.clear();
  const std::uint64_t* writer = allocation.writer.data();
  const std::size_t size = allocation.writer.size();
  std::uint64_t previous = 0;
  for (std::size_t byte = 0; byte < size; ++byte) {
    if (writer[byte] != 0 && writer[byte] != previous) {
      insert_sorted(out, writer[byte]);
    }
    previous = writer[byte];
  }
}

const std::vector<std::uint64_t>& DeviceModel::owners_of(const Allocation& allocation) {
  if (!allocation.owners_known) {
    derive_owners(allocation, allocation.owners);
    allocation.owners_known = true;
  }
  return allocation.owners;
}

void DeviceModel::set_writer(const Binding& binding, std::uint64_t writer) {
  std::pmr::vector<std::uint64_t>& writers =
      writers_to_change(allocations_.at(index_of(binding.allocation)));
  // One bounds check for the range, as at() per byte checked each (the
  // model's contract: a range past the allocation throws, never writes).
  if (binding.range.end() > writers.size()) {
    throw std::out_of_range("model: a write past the end of " + to_string(binding.allocation));
  }
  std::fill(writers.data() + binding.range.begin(), writers.data() + binding.range.end(), writer);
}

void DeviceModel::run_kernel(std::span<const Binding> reads, std::span<const Binding> writes,
                             std::uint8_t seed) {
  // Every input byte first, then the outputs in order (a later output
  // overwrites an earlier one where they alias). Each binding's range is
  // checked once, then its bytes walked through a plain pointer (at() per
  // byte was a call and a check each in the fuzz build, issue 13).
  std::uint32_t digest = seed;
  bool known = true;
  for (const Binding& read : reads) {
    const std::optional<std::uint8_t>* value = values_in(read);
    for (std::uint64_t byte = read.range.begin(); byte < read.range.end(); ++byte) {
      if (!value[byte]) {
        known = false;
      } else {
        digest = kernel_digest_step(digest, *value[byte]);
      }
    }
  }
  for (std::size_t output = 0; output < writes.size(); ++output) {
    std::optional<std::uint8_t>* value = values_in(writes[output]);
    for (std::uint64_t byte = writes[output].range.begin(); byte < writes[output].range.end();
         ++byte) {
      const std::uint64_t position = byte - writes[output].range.begin();
      value[byte] =
          known ? std::optional<std::uint8_t>(kernel_output_byte(digest, seed, output, position))
                : std::nullopt;
    }
  }
}

std::optional<std::uint8_t>* DeviceModel::values_in(const Binding& binding) {
  std::pmr::vector<std::optional<std::uint8_t>>& value =
      allocations_.at(index_of(binding.allocation)).value;
  if (binding.range.end() > value.size()) {
    throw std::out_of_range("model: a binding past the end of " + to_string(binding.allocation));
  }
  return value.data();
}

// ------------------------------------------------------------ launches

ModelLaunch DeviceModel::launch(std::string_view kernel, std::span<const Binding> reads,
                                std::span<const Binding> writes, const BodyPlan& plan,
                                std::optional<std::pair<FailureId, AllocationId>> core_choice) {
  LaunchContext context;
  context.core_choice = core_choice;
  return launch_impl(kernel, reads, writes, plan, context, std::nullopt);
}

ModelLaunch DeviceModel::launch(std::string_view kernel, std::span<const Binding> reads,
                                std::span<const Binding> writes, const BodyPlan& plan,
                                const LaunchContext& context) {
  return launch_impl(kernel, reads, writes, plan, context, std::nullopt);
}

ModelLaunch DeviceModel::write(const Binding& into, std::span<const std::byte> bytes,
                               const LaunchContext& context) {
  if (bytes.size() != into.range.size()) {
    // Refused before the launch: nothing is discovered, no number is used.
    ModelLaunch refused = fresh_launch();
    refused.binding_errors.push_back(ErrorKind::InvalidBinding);
    return refused;
  }
  // The caller's bytes in place: a copy cost an allocation per host write
  // and per create with bytes (issue 13).
  return launch_impl("host write", {}, std::span<const Binding>(&into, 1), BodyPlan{}, context,
                     bytes);
}

namespace {

bool valid_written(const WrittenRange& written, std::span<const Binding> writes) {
  return written.output < writes.size() &&
         written.range.end() <= writes[written.output].range.size();
}

Binding written_bytes(const WrittenRange& written, std::span<const Binding> writes) {
  const Binding& output = writes[written.output];
  return Binding{output.allocation, ByteRange::of(output.range.begin() + written.range.begin(),
                                                  output.range.begin() + written.range.end())};
}

std::vector<AllocationId> distinct_allocations(std::span<const Binding> bindings) {
  // At most one per binding, so room for all at once: grown from one, a
  // record of two or three outputs reallocated once or twice (issue 13).
  std::vector<AllocationId> out;
  out.reserve(bindings.size());
  for (const Binding& binding : bindings) {
    if (std::find(out.begin(), out.end(), binding.allocation) == out.end()) {
      out.push_back(binding.allocation);
    }
  }
  return out;
}

} // namespace

ModelLaunch DeviceModel::launch_impl(std::string_view kernel, std::span<const Binding> reads,
                                     std::span<const Binding> writes, const BodyPlan& plan,
                                     const LaunchContext& context,
                                     std::optional<std::span<const std::byte>> host_bytes) {
  const auto& core_choice = context.core_choice;
  ModelLaunch out = fresh_launch();
  discover(); // A launch sweeps first.
  // P3: every binding is checked before anything happens.
  for (const auto* set : {&reads, &writes}) {
    for (const Binding& binding : *set) {
      if (const auto kind = check(binding)) {
        if (std::find(out.binding_errors.begin(), out.binding_errors.end(), *kind) ==
            out.binding_errors.end()) {
          out.binding_errors.push_back(*kind);
        }
      }
    }
  }
  if (!out.binding_errors.empty()) {
    return out;
  }
  const std::uint64_t launch = next_launch_++;

  // S1: a read byte with a failure means skip. Only reads are checked (S5).
  // N2: under Report, never-written bytes do not skip; their runs are listed.
  const std::uint64_t reported =
      unwritten_reads_ == UnwrittenReads::Report && never_written_failure() ? never_written_ : 0;
  std::vector<UnwrittenRead> unwritten = emptied(out.result.unwritten);
  for (const Binding& read : reads) {
    // Through a plain pointer (vector's operator[] was a call per byte in
    // the fuzz build); check() above proved the range inside the bytes.
    const std::uint64_t* writers = allocations_[index_of(read.allocation)].writer.data();
    // The failures this read's runs name, ascending and each once — what a
    // std::set gave, without a node per failure per launch (issue 13).
    std::vector<std::uint64_t>& owners = scratch_read_owners_;
    owners.clear();
    for (std::uint64_t byte = read.range.begin(); byte < read.range.end(); ++byte) {
      const std::uint64_t writer = writers[byte];
      if (writer != 0 && writer == reported) {
        if (byte != read.range.begin() && writers[byte - 1] == reported) {
          unwritten.back().bytes = ByteRange::of(unwritten.back().bytes.begin(), byte + 1);
        } else {
          unwritten.push_back(UnwrittenRead{read.allocation, ByteRange::of(byte, byte + 1)});
        }
      } else if (writer != 0 && (byte == read.range.begin() || writers[byte - 1] != writer)) {
        insert_sorted(owners, writer); // Once per run.
      }
    }
    for (const std::uint64_t owner : owners) {
      out.acceptable_roots.emplace_back(FailureId::from_raw(owner), read.allocation);
    }
  }

  LaunchStatus status = LaunchStatus::Ran;
  // A failed body's S2 ranges, in a list kept for its room (scratch only:
  // log_entry copies them into the log).
  std::vector<Binding>& released = scratch_released_;
  released.clear();
  std::optional<std::vector<Binding>> named_only; // S6: what a wrote_only body wrote.
  if (!out.acceptable_roots.empty()) {
    std::pair<FailureId, AllocationId> choice = out.acceptable_roots.front();
    out.choice_acceptable =
        core_choice && std::find(out.acceptable_roots.begin(), out.acceptable_roots.end(),
                                 *core_choice) != out.acceptable_roots.end();
    if (out.choice_acceptable) {
      choice = *core_choice;
    }
    // The outputs take the root; nothing is minted (S4); the body never runs.
    for (const Binding& output : writes) {
      set_writer(output, choice.first.raw());
    }
    failures_.at(choice.first.raw())
        .records.push_back(
            SkipRecord{std::string(kernel), choice.second, distinct_allocations(writes), false});
    bury();
    status = LaunchStatus::Skipped;
    out.result.status = status;
    out.result.failure = choice.first;
    out.result.needed = choice.second;
  } else if (writes.empty()) {
    // Nothing claimed, nothing minted: a failure is only reported.
    race_readers(launch, kernel, context, out);
    switch (plan.kind) {
    case BodyKind::succeed:
    case BodyKind::check:
    case BodyKind::wrote_only:
      break;
    case BodyKind::fail_late:
      late_.push_back(Late{launch, plan.error, plan.written});
      break;
    case BodyKind::fail:
      status = LaunchStatus::Failed;
      out.result.status = status;
      out.result.error = named_error(kernel, plan.error, plan.written.size());
      break;
    case BodyKind::throws:
      status = LaunchStatus::Failed;
      out.body_threw = true;
      break;
    }
  } else {
    race_readers(launch, kernel, context, out);
    // S6: what the write set held before, per output byte, in case the body
    // names the only ranges it wrote; those failures live through the scope.
    // Copied only for such a body (the only reader of `prior`): for every
    // other launch the copy was an allocation per output (issue 13).
    std::vector<std::vector<std::uint64_t>> prior;
    if (plan.kind == BodyKind::wrote_only) {
      for (const Binding& output : writes) {
        const Allocation& allocation = allocations_[index_of(output.allocation)];
        prior.emplace_back(
            allocation.writer.begin() + static_cast<std::ptrdiff_t>(output.range.begin()),
            allocation.writer.begin() + static_cast<std::ptrdiff_t>(output.range.end()));
      }
    }
    // Enter: a provisional TornDown failure claims the whole write set (S1).
    // The failures the write set held and the provisional one live through
    // the scope: nothing is buried until the body's verdict is applied
    // below. (A bury here, keeping those, buried nothing: every other live
    // failure is named by a byte outside the write set, as between any two
    // operations, so it was a pass over every allocation per launch for no
    // change, issue 13.)
    const std::uint64_t provisional = mint(Error::torn_down());
    for (const Binding& output : writes) {
      set_writer(output, provisional);
    }
    // The body runs and writes its bytes, whatever it then says.
    if (host_bytes) {
      Allocation& target = allocations_[index_of(writes[0].allocation)];
      for (std::uint64_t at = 0; at < host_bytes->size(); ++at) {
        target.value.at(writes[0].range.begin() + at) =
            static_cast<std::uint8_t>((*host_bytes)[at]);
      }
    } else if (plan.kind == BodyKind::wrote_only) {
      write_named(reads, writes, plan);
    } else {
      run_kernel(reads, writes, plan.seed);
    }
    switch (plan.kind) {
    case BodyKind::wrote_only: {
      // S6: the valid named ranges are released, on every output of their
      // allocation; every other byte goes back to its writer before.
      std::vector<Binding> named;
      for (const WrittenRange& written : plan.written) {
        if (valid_written(written, writes) && !written.range.empty()) {
          named.push_back(written_bytes(written, writes));
        }
      }
      named_only = named;
      for (std::size_t output = 0; output < writes.size(); ++output) {
        const Binding& binding = writes[output];
        std::pmr::vector<std::uint64_t>& writers =
            writers_to_change(allocations_[index_of(binding.allocation)]);
        for (std::uint64_t byte = binding.range.begin(); byte < binding.range.end(); ++byte) {
          const bool wrote = std::any_of(named.begin(), named.end(), [&](const Binding& bytes) {
            return bytes.allocation == binding.allocation && bytes.range.begin() <= byte &&
                   byte < bytes.range.end();
          });
          writers[byte] = wrote ? 0 : prior[output][byte - binding.range.begin()];
        }
      }
      break;
    }
    case BodyKind::succeed:
    case BodyKind::check:
    case BodyKind::fail_late:
      for (const Binding& output : writes) {
        set_writer(output, 0); // T2: released.
      }
      if (plan.kind == BodyKind::fail_late) {
        late_.push_back(Late{launch, plan.error, plan.written});
      }
      break;
    case BodyKind::fail: {
      std::size_t ignored = 0;
      for (const WrittenRange& written : plan.written) {
        if (!valid_written(written, writes)) {
          ++ignored;
        }
      }
      Error error = named_error(kernel, plan.error, ignored);
      failures_.at(provisional).error = error; // G4.
      for (const WrittenRange& written : plan.written) {
        if (valid_written(written, writes)) {
          set_writer(written_bytes(written, writes), 0); // S2.
          released.push_back(written_bytes(written, writes));
        }
      }
      status = LaunchStatus::Failed;
      out.result.status = status;
      out.result.error = std::move(error);
      break;
    }
    case BodyKind::throws:
      // S3: the write set stays claimed by TornDown, now naming the kernel.
      // One string sized first (an operator+ chain was three allocations
      // per throwing body; issue 13). The words are unchanged.
      {
        constexpr std::string_view threw = " threw before finishing: ";
        const std::string_view why =
            plan.std_exception ? std::string_view(plan.what) : "a non-standard exception";
        std::string message;
        message.reserve(kernel.size() + threw.size() + why.size());
        message.append(kernel).append(threw).append(why);
        failures_.at(provisional).error = Error(ErrorKind::TornDown, std::move(message));
      }
      status = LaunchStatus::Failed;
      out.body_threw = true;
      break;
    }
    bury(); // G5: the provisional failure lives on only where it claims bytes.
    if (status == LaunchStatus::Failed && !out.body_threw && failures_.count(provisional) != 0) {
      out.result.failure = FailureId::from_raw(provisional);
    }
  }
  if (status != LaunchStatus::Skipped && !out.body_threw) {
    race_outputs(launch, kernel, writes, named_only ? &*named_only : nullptr, released, context,
                 status, out);
  } else {
    unwritten.clear(); // Only a launch whose body ran lists them (N2).
  }
  // Back in the verdict in any case, empty or not: its room goes back with
  // it (recycle()), where dropping it here freed room an earlier input took.
  out.result.unwritten = std::move(unwritten); // N2.
  // A body that ran and called check()/fail_later() leaves its launch
  // unconfirmed until the next synchronize (Device::awaits_verdict).
  if (status != LaunchStatus::Skipped && !out.body_threw &&
      (plan.kind == BodyKind::check || plan.kind == BodyKind::fail_late) && !host_bytes) {
    require_rising(checked_.empty() ? std::nullopt : std::optional(checked_.back()), launch,
                   "checked_");
    checked_.push_back(launch);
  }
  log_entry(launch, kernel, status, reads, writes, released, named_only ? &*named_only : nullptr);
  return out;
}

DeviceModel::Logged& DeviceModel::log_entry(std::uint64_t launch, std::string_view kernel,
                                            LaunchStatus status, std::span<const Binding> reads,
                                            std::span<const Binding> writes,
                                            std::span<const Binding> released,
                                            const std::vector<Binding>* named) {
  Logged logged{launch, log_text_.size(), kernel.size(), status, {}, {}, {}, false, {}};
  if (log_text_.capacity() < kFirstText) {
    log_text_.reserve(kFirstText);
  }
  log_text_.append(kernel);
  logged.reads = log_list(reads);
  logged.writes = log_list(writes);
  logged.released = log_list(released);
  if (named != nullptr) {
    logged.named_only = true;
    logged.named = log_list(*named);
  }
  require_rising(log_.empty() ? std::nullopt : std::optional(log_.back().launch), launch, "log_");
  reserve_first(log_);
  log_.push_back(logged);
  return log_.back();
}

void DeviceModel::require_rising(std::optional<std::uint64_t> last, std::uint64_t launch,
                                 const char* list) {
  if (last && *last >= launch) {
    throw std::logic_error("DeviceModel: launch " + std::to_string(launch) + " appended to " +
                           list + " after launch " + std::to_string(*last) +
                           " (awaits_verdict needs them rising)");
  }
}

DeviceModel::LogSlice DeviceModel::log_list(std::span<const Binding> bindings) {
  const LogSlice slice{log_bindings_.size(), bindings.size()};
  if (log_bindings_.capacity() == 0) {
    log_bindings_.reserve(4 * kFirstRoom); // A few per entry: reads, writes, some released.
  }
  log_bindings_.insert(log_bindings_.end(), bindings.begin(), bindings.end());
  return slice;
}

// ------------------------------------------------------------ S6, O4

void DeviceModel::write_named(std::span<const Binding> reads, std::span<const Binding> writes,
                              const BodyPlan& plan) {
  // Like run_kernel, but only the valid named ranges, in the order named.
  std::uint32_t digest = plan.seed;
  bool known = true;
  for (const Binding& read : reads) {
    const Allocation& allocation = allocations_.at(index_of(read.allocation));
    for (std::uint64_t byte = read.range.begin(); byte < read.range.end(); ++byte) {
      if (!allocation.value.at(byte)) {
        known = false;
      } else {
        digest = kernel_digest_step(digest, *allocation.value[byte]);
      }
    }
  }
  for (const WrittenRange& written : plan.written) {
    if (!valid_written(written, writes)) {
      continue;
    }
    const Binding& output = writes[written.output];
    Allocation& allocation = allocations_.at(index_of(output.allocation));
    for (std::uint64_t position = written.range.begin(); position < written.range.end();
         ++position) {
      allocation.value.at(output.range.begin() + position) =
          known ? std::optional<std::uint8_t>(
                      kernel_output_byte(digest, plan.seed, written.output, position))
                : std::nullopt;
    }
  }
}

std::string DeviceModel::kernel_of(std::uint64_t launch) const {
  for (const Logged& logged : log_) {
    if (logged.launch == launch) {
      return std::string(kernel_in(logged));
    }
  }
  return "?";
}

namespace {

/// One piece of a wording the model expects: text, or a number in decimal.
/// Why pieces: the Race wording of every racing launch in detect mode was
/// built as two or three concatenated strings per conflict, each an
/// allocation, on the passing path (issue 13, 3% of stream_fuzzer's time);
/// pieces compare in place against core's message, allocating nothing. A
/// failing comparison still reports core's whole message (the caller).
class Piece {
 public:
  // Implicit: a wording reads as a braced list of its pieces.
  Piece(std::string_view text)
      : text_(text) {}
  Piece(const std::string& text)
      : text_(text) {}
  Piece(const char* text)
      : text_(text) {}
  Piece(std::uint64_t number)
      : number_(number) {}
  Piece(std::uint32_t number)
      : number_(number) {}

  /// Whether `text` holds this piece at `at`; moves `at` past it if so.
  bool take(std::string_view text, std::size_t& at) const {
    std::string_view expected = text_;
    std::array<char, 20> digits{}; // 2^64 - 1 has 20 digits.
    if (number_) {
      const auto written = std::to_chars(digits.data(), digits.data() + digits.size(), *number_);
      expected =
          std::string_view(digits.data(), static_cast<std::size_t>(written.ptr - digits.data()));
    }
    if (text.substr(std::min(at, text.size())).substr(0, expected.size()) != expected) {
      return false;
    }
    at += expected.size();
    return true;
  }

 private:
  std::string_view text_;
  std::optional<std::uint64_t> number_;
};

/// Reads a wording from the front of core's message, piece by piece.
class Wording {
 public:
  explicit Wording(std::string_view text)
      : text_(text) {}

  /// Whether the pieces come next, in order (consumed if so).
  bool then(std::initializer_list<Piece> pieces) {
    return std::all_of(pieces.begin(), pieces.end(),
                       [&](const Piece& piece) { return piece.take(text_, at_); });
  }

  /// Whether "a, b)" comes next with [a, b) a non-empty range inside
  /// `within`.
  bool range_inside(ByteRange within) {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    if (!number(begin) || !then({", "}) || !number(end) || !then({")"})) {
      return false;
    }
    return within.begin() <= begin && begin < end && end <= within.end();
  }

  /// Whether the message ends here, or (`more_allowed`) goes on with
  /// "; and K more such conflicts", K >= 1: how many, core's run grain
  /// decides.
  bool ends(bool more_allowed) {
    if (at_ == text_.size()) {
      return true;
    }
    std::uint64_t count = 0;
    return more_allowed && then({"; and "}) && number(count) && count != 0 &&
           then({" more such conflicts"}) && at_ == text_.size();
  }

 private:
  bool number(std::uint64_t& value) {
    const std::size_t from = at_;
    value = 0;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
      value = value * 10 + static_cast<std::uint64_t>(text_[at_] - '0');
      ++at_;
    }
    return at_ != from;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

} // namespace

void DeviceModel::race_readers(std::uint64_t launch, std::string_view kernel,
                               const LaunchContext& context, ModelLaunch& out) {
  // O4, write after read: every unordered earlier reader, oldest first.
  std::vector<std::uint64_t> readers;
  for (const RaceFinding& race : context.races) {
    if (race.kind == RaceKind::write_after_read &&
        std::find(readers.begin(), readers.end(), race.earlier) == readers.end()) {
      readers.push_back(race.earlier);
    }
  }
  std::sort(readers.begin(), readers.end());
  static_cast<void>(kernel);
  for (const std::uint64_t reader : readers) {
    const std::string reader_kernel = kernel_of(reader);
    const std::optional<std::uint64_t> failure =
        attribute(Late{reader, Error::race("(core's wording)"), {}});
    if (!failure || failures_.count(*failure) == 0) {
      continue; // Dropped, or it claimed nothing: no message survives.
    }
    const Error* core = context.core_failure_error
                            ? context.core_failure_error(FailureId::from_raw(*failure))
                            : nullptr;
    if (core == nullptr) {
      // Gone by the end of the launch (its bytes were rewritten): no wording
      // survives to check; the graph comparison checks the model drops it too.
      continue;
    }
    bool ok = false;
    for (const RaceFinding& race : context.races) {
      if (race.kind != RaceKind::write_after_read || race.earlier != reader) {
        continue;
      }
      Wording wording(core->message());
      ok =
          core->kind() == ErrorKind::Race &&
          wording.then({reader_kernel, ": launch ", reader, " (\"", reader_kernel, "\") on stream ",
                        race.stream, " read ", to_string(race.allocation), " bytes ["}) &&
          wording.range_inside(race.bytes) &&
          wording.then({" while launch ", launch, " on stream ", context.stream,
                        " wrote them, with nothing ordering the two (detect mode queued no "
                        "wait) (reported when the device synchronised)"}) &&
          wording.ends(false);
      if (ok) {
        break;
      }
    }
    if (!ok) {
      out.race_wording.push_back(
          "the write-after-read failure of launch " + std::to_string(reader) + " (" +
          to_string(FailureId::from_raw(*failure)) + ") reads {" + to_string(*core) +
          "}, naming none of the conflicts the model found");
      continue;
    }
    failures_.at(*failure).error = *core;
  }
}

void DeviceModel::race_outputs(std::uint64_t launch, std::string_view kernel,
                               std::span<const Binding> writes, const std::vector<Binding>* named,
                               std::vector<Binding>& released, const LaunchContext& context,
                               LaunchStatus& status, ModelLaunch& out) {
  bool read_race = false;
  bool write_race = false;
  for (const RaceFinding& race : context.races) {
    read_race = read_race || race.kind == RaceKind::read_after_write;
    write_race = write_race || race.kind == RaceKind::write_after_write;
  }
  if (!read_race && !write_race) {
    return;
  }
  // What it produced: its write set if it ran (a wrote_only body: only the
  // ranges it named, S6), else what it reported written. A view, not a
  // copy (an allocation per racing launch, issue 13): `released` is only
  // replaced below once both loops over it are done.
  const std::span<const Binding> produced = status != LaunchStatus::Ran
                                                ? std::span<const Binding>(released)
                                            : named != nullptr ? std::span<const Binding>(*named)
                                                               : writes;
  const std::uint64_t failure = mint(Error::race("(core's wording)"));
  for (const Binding& bytes : produced) {
    Allocation& allocation = allocations_.at(index_of(bytes.allocation));
    for (std::uint64_t byte = bytes.range.begin(); byte < bytes.range.end(); ++byte) {
      const bool suspect =
          read_race ||
          std::any_of(context.races.begin(), context.races.end(), [&](const RaceFinding& race) {
            return race.kind == RaceKind::write_after_write &&
                   race.allocation == bytes.allocation && race.bytes.begin() <= byte &&
                   byte < race.bytes.end();
          });
      if (suspect) {
        writers_to_change(allocation).at(byte) = failure;
      }
    }
  }
  // What it produced and the race does not claim stays released: a later
  // race on this launch's reads makes those bytes stale (O4), so they are
  // what its replay claims.
  std::vector<Binding> unclaimed;
  for (const Binding& bytes : produced) {
    Allocation& allocation = allocations_.at(index_of(bytes.allocation));
    // The open run's first byte, when `in_run`. A plain pair, not an
    // optional: g++ 12 at -O3 flagged the optional as maybe-uninitialized.
    std::uint64_t run_begin = 0;
    bool in_run = false;
    for (std::uint64_t byte = bytes.range.begin(); byte <= bytes.range.end(); ++byte) {
      const bool at_end = byte == bytes.range.end();
      const bool claimed = !at_end && allocation.writer.at(byte) == failure;
      if (!at_end && !claimed && !in_run) {
        run_begin = byte;
        in_run = true;
      } else if ((at_end || claimed) && in_run) {
        unclaimed.push_back({bytes.allocation, ByteRange::of(run_begin, byte)});
        in_run = false;
      }
    }
  }
  released = std::move(unclaimed);
  // The wording: core names one conflict of the first kind it met (reads are
  // planned first), with bytes inside it.
  bool ok = false;
  const RaceKind first = read_race ? RaceKind::read_after_write : RaceKind::write_after_write;
  const Error* const core = context.core_error;
  for (const RaceFinding& race : context.races) {
    if (!core || race.kind != first) {
      continue;
    }
    Wording wording(core->message());
    ok =
        core->kind() == ErrorKind::Race &&
        wording.then({kernel, " (launch ", launch, " on stream ", context.stream, ") ",
                      read_race ? "read " : "wrote ", to_string(race.allocation), " bytes ["}) &&
        wording.range_inside(race.bytes) && wording.then({" that "}) &&
        (race.earlier == 0 ? wording.then({"earlier work on stream ", race.stream,
                                           " (its memory's previous use there)"})
                           : wording.then({"launch ", race.earlier, " (\"", kernel_of(race.earlier),
                                           "\") on stream ", race.stream})) &&
        wording.then({" wrote, with nothing ordering the two (detect mode queued no wait)"}) &&
        wording.ends(true);
    if (ok) {
      break;
    }
  }
  // Core's own error when its wording passed: copied once, not made and
  // then overwritten (issue 13).
  Error error = ok ? *core : Error::race("(core's wording)");
  if (!ok) {
    out.race_wording.push_back("the Race failure of launch " + std::to_string(launch) + " reads {" +
                               (core ? to_string(*core) : std::string("no error")) +
                               "}, naming none of the conflicts the model found");
  }
  failures_.at(failure).error = error;
  bury();
  status = LaunchStatus::Failed;
  out.result.status = status;
  out.result.failure.reset();
  if (failures_.count(failure) != 0) {
    out.result.failure = FailureId::from_raw(failure);
  }
  out.result.error = std::move(error);
}

// ------------------------------------------------------------ late failures

namespace {

/// `member`'s bits over `range`, once the range is checked to lie inside it
/// (std::out_of_range if not, as at() per byte threw): the per-byte at()
/// on a vector<bool> was a call and a check per byte, and awaits_verdict
/// and attribute replay every launch since the last synchronize through
/// these (issue 13).
std::vector<bool>::iterator bits_in(std::vector<bool>& member, ByteRange range) {
  if (range.end() > member.size()) {
    throw std::out_of_range("model: a binding past the end of its byte set");
  }
  return member.begin() + static_cast<std::ptrdiff_t>(range.begin());
}

} // namespace

const std::vector<bool>* DeviceModel::Bytes::find(std::uint64_t allocation) const noexcept {
  for (std::size_t at = 0; at < used; ++at) {
    if (members[at].allocation == allocation) {
      return &members[at].bits;
    }
  }
  return nullptr;
}

std::vector<bool>* DeviceModel::Bytes::find(std::uint64_t allocation) noexcept {
  const Bytes& self = *this;
  return const_cast<std::vector<bool>*>(self.find(allocation)); // NOLINT: this one is not const.
}

bool DeviceModel::touches(const Bytes& set, const Binding& binding) const {
  const std::vector<bool>* member = set.find(binding.allocation.raw());
  if (member == nullptr || binding.range.empty()) {
    return false;
  }
  if (binding.range.end() > member->size()) {
    throw std::out_of_range("model: a binding past the end of its byte set");
  }
  for (std::uint64_t byte = binding.range.begin(); byte < binding.range.end(); ++byte) {
    if ((*member)[byte]) {
      return true;
    }
  }
  return false;
}

void DeviceModel::add(Bytes& set, const Binding& binding) const {
  const std::uint64_t size = allocations_.at(index_of(binding.allocation)).size;
  std::vector<bool>* member = set.find(binding.allocation.raw());
  if (member == nullptr) {
    if (set.used == set.members.size()) {
      set.members.emplace_back();
    }
    Bytes::Member& fresh = set.members[set.used++];
    fresh.allocation = binding.allocation.raw();
    fresh.bits.assign(size, false); // In the room a former replay left.
    member = &fresh.bits;
  }
  member->resize(size, false);
  if (!binding.range.empty()) {
    const auto first = bits_in(*member, binding.range);
    std::fill(first, first + static_cast<std::ptrdiff_t>(binding.range.size()), true);
  }
}

void DeviceModel::remove(Bytes& set, const Binding& binding) const {
  std::vector<bool>* member = set.find(binding.allocation.raw());
  if (member == nullptr || binding.range.empty()) {
    return;
  }
  const auto first = bits_in(*member, binding.range);
  std::fill(first, first + static_cast<std::ptrdiff_t>(binding.range.size()), false);
}

void DeviceModel::synchronize(bool drops_discovered) {
  // Oldest launch first. Bodies report in launch order, so the list is
  // sorted already but for exchanges: std::stable_sort takes a buffer from
  // the heap even then, one allocation per synchronize (issue 13).
  const auto by_launch = [](const Late& a, const Late& b) { return a.launch < b.launch; };
  if (!std::is_sorted(late_.begin(), late_.end(), by_launch)) {
    std::stable_sort(late_.begin(), late_.end(), by_launch);
  }
  for (const Late& late : late_) {
    attribute(late);
  }
  late_.clear();
  // Everything is confirmed now. The entries' lists and names go with
  // them; the shared buffers keep their capacity for the launches after.
  log_.clear();
  log_bindings_.clear();
  log_text_.clear();
  checked_.clear();
  pending_exchanges_.clear();
  if (drops_discovered) {
    discover();
  }
}

std::optional<std::uint64_t> DeviceModel::attribute(const Late& late) {
  auto origin = std::find_if(log_.begin(), log_.end(),
                             [&](const Logged& logged) { return logged.launch == late.launch; });
  if (origin == log_.end()) {
    throw std::logic_error("model: a late failure of launch " + std::to_string(late.launch) +
                           ", which is not remembered");
  }
  // A race reaching a reader that failed after writing some bytes (S2):
  // those bytes are stale. Otherwise a launch no longer standing as "ran"
  // carries a failure on its outputs already.
  const bool raced_partial =
      origin->status == LaunchStatus::Failed && late.error.kind() == ErrorKind::Race &&
      std::ranges::any_of(list_of(origin->released),
                          [](const Binding& bytes) { return !bytes.range.empty(); });
  if (origin->status != LaunchStatus::Ran && !raced_partial) {
    return std::nullopt;
  }
  Bytes& stale = scratch_bytes_;
  stale.clear();
  for (const Binding& output : raced_partial ? list_of(origin->released) : covered(*origin)) {
    add(stale, output);
  }
  std::size_t ignored = 0;
  for (const WrittenRange& written : late.written) {
    if (valid_written(written, list_of(origin->writes))) {
      remove(stale, written_bytes(written, list_of(origin->writes)));
    } else {
      ++ignored;
    }
  }
  const std::uint64_t failure = mint(named_error(kernel_in(*origin), late.error, ignored,
                                                 " (reported when the device synchronised)"));
  ++attributed_; // Counted before any byte changes: the bytes below may be anywhere.
  origin->status = LaunchStatus::Failed;
  origin->released.count = 0; // Claimed now: a later race on it is moot.

  for (auto later = std::next(origin); later != log_.end(); ++later) {
    const Binding* needed = nullptr;
    for (const Binding& read : list_of(later->reads)) {
      if (touches(stale, read)) {
        needed = &read;
        break;
      }
    }
    const std::span<const Binding> outputs = covered(*later);
    if (needed != nullptr && later->status == LaunchStatus::Ran && !outputs.empty()) {
      // It ran on garbage: what it produced is garbage too (a wrote_only
      // body's named ranges; the rest of its write set is as it was, S6).
      failures_.at(failure).records.push_back(SkipRecord{
          std::string(kernel_in(*later)), needed->allocation, distinct_allocations(outputs), true});
      for (const Binding& output : outputs) {
        add(stale, output);
      }
      later->status = LaunchStatus::Failed;
      later->released.count = 0; // Claimed now: a later race on it is moot.
    } else if (needed != nullptr && later->status == LaunchStatus::Failed &&
               std::ranges::any_of(list_of(later->released),
                                   [](const Binding& bytes) { return !bytes.range.empty(); })) {
      // It failed, but the bytes it reported written were computed from
      // garbage: those are stale now; the rest carries its own failure.
      for (const Binding& output : outputs) {
        remove(stale, output);
      }
      std::vector<Binding> garbage;
      for (const Binding& bytes : list_of(later->released)) {
        if (!bytes.range.empty()) {
          add(stale, bytes);
          garbage.push_back(bytes);
        }
      }
      failures_.at(failure).records.push_back(SkipRecord{
          std::string(kernel_in(*later)), needed->allocation, distinct_allocations(garbage), true});
      later->released.count = 0; // Claimed now; a later late failure finds them carried.
    } else {
      // It overwrote what it covered, with good data or with its own
      // failure; a wrote_only launch's other bytes stay as they were (S6).
      for (const Binding& output : outputs) {
        remove(stale, output);
      }
    }
  }
  for (std::size_t at = 0; at < stale.used; ++at) {
    const std::vector<bool>& member = stale.members[at].bits;
    Allocation& allocation =
        allocations_.at(index_of(AllocationId::from_raw(stale.members[at].allocation)));
    if (allocation.state != State::live) {
      continue; // Dropped: no allocation left to carry it.
    }
    for (std::uint64_t byte = 0; byte < member.size(); ++byte) {
      if (member[byte]) {
        writers_to_change(allocation).at(byte) = failure;
      }
    }
  }
  bury();
  return failure;
}

// ------------------------------------------------------------ reads

ModelRead DeviceModel::read(const Binding& from, std::uint64_t into_size) {
  return reports_for(from, true, into_size);
}

ModelRead DeviceModel::stale_reports(const Binding& from) {
  return reports_for(from, false, from.range.size());
}

ModelRead DeviceModel::reports_for(const Binding& from, bool copy, std::uint64_t into_size) {
  synchronize(false);
  discover(); // Resolving the binding discovers dropped handles.
  ModelRead out = fresh_read();
  if (const auto kind = check(from)) {
    out.binding_errors.push_back(*kind);
    return out;
  }
  if (copy && into_size != from.range.size()) {
    out.binding_errors.push_back(ErrorKind::InvalidBinding);
    return out;
  }
  const Allocation& allocation = allocations_[index_of(from.allocation)];
  // The failures the read's runs name, ascending and each once, in the
  // scratch list launch_impl uses (a std::set was a node per failure per
  // read, issue 13); check() above proved the range inside the bytes.
  std::vector<std::uint64_t>& owners = scratch_read_owners_;
  owners.clear();
  const std::uint64_t* writers = allocation.writer.data();
  for (std::uint64_t byte = from.range.begin(); byte < from.range.end(); ++byte) {
    if (writers[byte] != 0 && (byte == from.range.begin() || writers[byte - 1] != writers[byte])) {
      insert_sorted(owners, writers[byte]); // Once per run.
    }
  }
  for (const std::uint64_t owner : owners) {
    Report expected = report(FailureId::from_raw(owner), from.allocation);
    // The first stale run of this failure within the read.
    std::uint64_t begin = from.range.begin();
    while (allocation.writer[begin] != owner) {
      ++begin;
    }
    std::uint64_t end = begin;
    while (end < from.range.end() && allocation.writer[end] == owner) {
      ++end;
    }
    expected.stale = ByteRange::of(begin, end);
    out.reports.push_back(std::move(expected));
  }
  if (copy && owners.empty()) {
    out.bytes.assign(allocation.value.begin() + static_cast<std::ptrdiff_t>(from.range.begin()),
                     allocation.value.begin() + static_cast<std::ptrdiff_t>(from.range.end()));
  }
  return out;
}

Report DeviceModel::report(FailureId failure, AllocationId read) const {
  Report expected{failure, Error(ErrorKind::Generic, {}), read, std::nullopt, {}, read, 0, false};
  report(failure, read, expected);
  return expected;
}

void DeviceModel::report(FailureId failure, AllocationId read, Report& expected) const {
  // The walk's steps are pointers into the model's records; only here are
  // they copied, each into a path element kept from the caller's last
  // report where there is one (assigned: its name and list keep capacity).
  std::vector<const SkipRecord*>& steps = scratch_steps_;
  const AllocationId origin = report_path(failure, read, steps);
  const Failure& found = failures_.at(failure.raw());
  // Every field set again; assigned, so the caller's strings and lists keep
  // their capacity.
  expected.failure = failure;
  expected.root = found.error;
  expected.read = read;
  expected.stale.reset();
  expected.origin = origin;
  expected.skips_recorded = found.records.size();
  expected.path_may_be_incomplete = found.records.size() > kept_skip_records;
  const std::size_t kept = std::min(steps.size(), expected.path.size());
  for (std::size_t at = 0; at < kept; ++at) {
    expected.path[at] = *steps[at];
  }
  for (std::size_t at = kept; at < steps.size(); ++at) {
    expected.path.push_back(*steps[at]);
  }
  expected.path.erase(expected.path.begin() + static_cast<std::ptrdiff_t>(steps.size()),
                      expected.path.end());
}

AllocationId DeviceModel::report_path(FailureId failure, AllocationId read,
                                      std::vector<const SkipRecord*>& path) const {
  path.clear();
  const auto found = failures_.find(failure.raw());
  if (found == failures_.end()) {
    throw std::logic_error("model: report of " + to_string(failure) + ", which is not live");
  }
  // The kept records (skip_records()'s, in place: this runs on every read).
  const std::vector<SkipRecord>& all = found->second.records;
  const std::span<const SkipRecord> kept(
      all.begin() + static_cast<std::ptrdiff_t>(
                        all.size() > kept_skip_records ? all.size() - kept_skip_records : 0),
      all.end());
  // G8: from the allocation read, step to the newest kept record (older than
  // the last step) that produced the allocation being explained, and on to
  // the allocation it needed; stop where no record produced it.
  AllocationId origin = read;
  std::size_t older_than = kept.size();
  for (;;) {
    std::optional<std::size_t> step;
    for (std::size_t index = 0; index < older_than; ++index) {
      const auto& produced = kept[index].produced;
      if (std::find(produced.begin(), produced.end(), origin) != produced.end()) {
        step = index; // Keeps the newest.
      }
    }
    if (!step) {
      break;
    }
    path.push_back(&kept[*step]);
    origin = kept[*step].needed;
    older_than = *step;
  }
  return origin;
}

// ------------------------------------------------------------ observation

std::vector<AllocationId> DeviceModel::allocations() const {
  std::vector<AllocationId> out;
  for (const std::size_t index : held_) {
    out.push_back(id_at(index));
  }
  return out;
}

bool DeviceModel::holds_any() const {
  return !held_.empty();
}

std::optional<AllocationId> DeviceModel::first_dropped() const {
  if (dropped_count_ == 0) {
    return std::nullopt;
  }
  for (const std::size_t index : held_) {
    if (allocations_[index].state == State::dropped) {
      return id_at(index);
    }
  }
  return std::nullopt;
}

std::vector<AllocationId> DeviceModel::dropped() const {
  std::vector<AllocationId> out;
  for (std::size_t index = 0; index < allocations_.size(); ++index) {
    if (allocations_[index].state == State::dropped) {
      out.push_back(id_at(index));
    }
  }
  return out;
}

bool DeviceModel::live(AllocationId allocation) const {
  const Allocation* found = find(allocation);
  return found != nullptr && found->state == State::live;
}

std::uint64_t DeviceModel::size(AllocationId allocation) const {
  const Allocation* found = find(allocation);
  return found != nullptr ? found->size : 0;
}

std::vector<std::pair<FailureId, ByteRange>> DeviceModel::claims(AllocationId allocation) const {
  std::vector<std::pair<FailureId, ByteRange>> out;
  const Allocation* found = find(allocation);
  if (found == nullptr || found->state == State::gone) {
    return out;
  }
  std::uint64_t byte = 0;
  while (byte < found->writer.size()) {
    const std::uint64_t owner = found->writer[byte];
    std::uint64_t end = byte + 1;
    while (end < found->writer.size() && found->writer[end] == owner) {
      ++end;
    }
    if (owner != 0) {
      out.emplace_back(FailureId::from_raw(owner), ByteRange::of(byte, end));
    }
    byte = end;
  }
  return out;
}

std::vector<std::optional<std::uint8_t>> DeviceModel::bytes(AllocationId allocation) const {
  const Allocation* found = find(allocation);
  return found != nullptr
             ? std::vector<std::optional<std::uint8_t>>(found->value.begin(), found->value.end())
             : std::vector<std::optional<std::uint8_t>>();
}

std::span<const std::optional<std::uint8_t>>
DeviceModel::bytes_in_place(AllocationId allocation) const {
  const Allocation* found = find(allocation);
  return found != nullptr ? std::span<const std::optional<std::uint8_t>>(found->value)
                          : std::span<const std::optional<std::uint8_t>>();
}

std::span<const std::uint64_t> DeviceModel::writers_in_place(AllocationId allocation) const {
  const Allocation* found = find(allocation);
  return found != nullptr && found->state != State::gone
             ? std::span<const std::uint64_t>(found->writer)
             : std::span<const std::uint64_t>();
}

std::vector<FailureId> DeviceModel::live_failures() const {
  std::vector<FailureId> out;
  for (const auto& [raw, failure] : failures_) {
    out.push_back(FailureId::from_raw(raw));
  }
  return out;
}

const Error* DeviceModel::error(FailureId failure) const {
  const auto found = failures_.find(failure.raw());
  return found != failures_.end() ? &found->second.error : nullptr;
}

std::uint64_t DeviceModel::tags(FailureId failure) const {
  if (failures_.count(failure.raw()) == 0) {
    return 0;
  }
  std::uint64_t carriers = 0;
  for (const Allocation& allocation : allocations_) {
    if (allocation.state != State::gone &&
        std::find(allocation.writer.begin(), allocation.writer.end(), failure.raw()) !=
            allocation.writer.end()) {
      ++carriers;
    }
  }
  return carriers;
}

std::uint64_t DeviceModel::skips_recorded(FailureId failure) const {
  const auto found = failures_.find(failure.raw());
  return found != failures_.end() ? found->second.records.size() : 0;
}

std::vector<SkipRecord> DeviceModel::skip_records(FailureId failure) const {
  const auto found = failures_.find(failure.raw());
  if (found == failures_.end()) {
    return {};
  }
  const std::vector<SkipRecord>& all = found->second.records;
  const std::size_t first = all.size() > kept_skip_records ? all.size() - kept_skip_records : 0;
  return {all.begin() + static_cast<std::ptrdiff_t>(first), all.end()};
}

namespace {

std::string describe(const std::vector<std::pair<FailureId, ByteRange>>& claims) {
  std::string out = "[";
  for (const auto& [failure, range] : claims) {
    out += (out.size() > 1 ? ", " : "") + to_string(failure) + " " + to_string(range);
  }
  return out + "]";
}

std::string describe(const std::vector<SkipRecord>& records) {
  std::string out = "[";
  for (const SkipRecord& record : records) {
    out += (out.size() > 1 ? ", {" : "{") + record.kernel + (record.ran ? " ran" : " skipped") +
           " needed " + to_string(record.needed) + " produced";
    for (const AllocationId produced : record.produced) {
      out += " " + to_string(produced);
    }
    out += "}";
  }
  return out + "]";
}

} // namespace

std::optional<std::string>
DeviceModel::compare_allocation(AllocationId id, std::uint64_t size,
                                const std::vector<std::pair<FailureId, ByteRange>>& held,
                                const std::byte* data, bool values) const {
  const Allocation& model = allocations_[index_of(id)];
  if (size != model.size) {
    return to_string(id) + " has size " + std::to_string(size) + ", the model " +
           std::to_string(model.size);
  }
  const auto expected = claims(id);
  if (held != expected) {
    return "D1: " + to_string(id) + " claims " + describe(held) + ", the model " +
           describe(expected);
  }
  if (!values) {
    return std::nullopt;
  }
  for (std::uint64_t byte = 0; byte < model.size; ++byte) {
    if (detect_ && model.writer[byte] != 0) {
      continue; // O4: a race may have changed it, and then it is claimed.
    }
    const auto value = static_cast<std::uint8_t>(data[byte]);
    if (model.value[byte] && *model.value[byte] != value) {
      return "D1/S1/O1: byte " + std::to_string(byte) + " of " + to_string(id) + " holds " +
             std::to_string(value) + ", the model " + std::to_string(*model.value[byte]) +
             " (a body ran, or did not, or ran out of order, against the model)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> DeviceModel::mismatch(Device& device, AllocationId allocation,
                                                 bool values) const {
  // A passing run allocates nothing: the size, the claims (same_claims,
  // walked in place) and the bytes are compared where they lie, and only a
  // difference copies core's claims out for compare_allocation to describe.
  // StreamRig asks this after every launch for each allocation bound, where
  // the two claim lists it used to build were 4% of stream_fuzzer's
  // allocations (issue 13, twenty-seventh round).
  std::optional<std::string> difference;
  bool held = false;
  device.memory().for_each_allocation([&](const AllocationInfo& info) {
    if (info.id != allocation) {
      return;
    }
    held = true;
    const Allocation* model = find(info.id);
    if (model == nullptr || model->state == State::gone) {
      return; // Not the model's: reported below.
    }
    if (info.size == model->size && same_claims(info.id, *info.taint) &&
        (!values || same_values(*model, info.data))) {
      return;
    }
    std::vector<std::pair<FailureId, ByteRange>> claims;
    info.taint->for_each_claim(
        [&](FailureId failure, ByteRange range) { claims.emplace_back(failure, range); });
    difference = compare_allocation(info.id, info.size, claims, info.data, values);
    if (!difference) {
      // The two comparisons disagree: a bug in one of them, never a pass.
      difference = "internal: the in-place comparison finds " + to_string(info.id) +
                   " differs from the model, and compare_allocation finds no difference";
    }
  });
  const Allocation* model = find(allocation);
  const bool model_holds = model != nullptr && model->state != State::gone;
  if (held != model_holds) {
    return "P1: the manager " + std::string(held ? "holds " : "does not hold ") +
           to_string(allocation) + ", the model " + (model_holds ? "does" : "does not");
  }
  return difference;
}

std::optional<std::string> DeviceModel::mismatch(Device& device, bool values) const {
  return mismatch_in(device, nullptr, values);
}

std::optional<std::string> DeviceModel::mismatch_touched(Device& device,
                                                         std::span<const AllocationId> touched,
                                                         bool values) const {
  return mismatch_in(device, &touched, values);
}

bool DeviceModel::same_claims(AllocationId id, const Taint& taint) const {
  // Core's claims, ascending and coalesced, against the model's runs of
  // one non-zero writer (claims(id)), walked side by side: nothing is
  // copied on a passing run. Through a plain pointer: vector's operator[]
  // was a call per byte in the fuzz build (-O1), after every op.
  const Allocation& model = allocations_[index_of(id)];
  if (owners_of(model).empty()) {
    // No byte of the model's is claimed (its owners list, derived from its
    // bytes and kept until they change, says so without a pass over them):
    // the same exactly when core visits no claim either. Most allocations
    // are clean most of the time, and this runs after every op for each
    // touched one (issue 13).
    bool claimed = false;
    taint.for_each_claim([&](FailureId, ByteRange) { claimed = true; });
    return !claimed;
  }
  const std::pmr::vector<std::uint64_t>& writers = model.writer;
  const std::uint64_t* writer = writers.data();
  const std::uint64_t size = writers.size();
  std::uint64_t byte = 0; // The model's next run starts at or after here.
  bool same = true;
  taint.for_each_claim([&](FailureId failure, ByteRange range) {
    if (!same) {
      return;
    }
    while (byte < size && writer[byte] == 0) {
      ++byte;
    }
    if (byte == size) {
      same = false; // Core claims more than the model.
      return;
    }
    const std::uint64_t owner = writer[byte];
    std::uint64_t end = byte + 1;
    while (end < size && writer[end] == owner) {
      ++end;
    }
    same = failure.raw() == owner && range == ByteRange::of(byte, end);
    byte = end;
  });
  while (same && byte < size && writer[byte] == 0) {
    ++byte;
  }
  return same && byte == size; // And no model run left over.
}

bool DeviceModel::same_values(const Allocation& model, const std::byte* data) const {
  // Every byte, through plain pointers: vector's checked operator[] was
  // a compare and branch per byte here (both vectors hold model.size).
  const std::uint64_t* writers = model.writer.data();
  const std::optional<std::uint8_t>* known = model.value.data();
  for (std::uint64_t byte = 0; byte < model.size; ++byte) {
    if (detect_ && writers[byte] != 0) {
      continue; // O4: a race may have changed it, and then it is claimed.
    }
    if (known[byte] && *known[byte] != static_cast<std::uint8_t>(data[byte])) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> DeviceModel::mismatch_in(Device& device,
                                                    const std::span<const AllocationId>* touched,
                                                    bool values) const {
  // Allocations the manager holds: their ids against the model's, and the
  // claims and bytes of every one (of the touched ones only, when
  // `touched` is given). A passing run allocates nothing; a difference is
  // then described by compare_allocation, the cold path.
  //
  // The ids: the manager's are the model's held ones exactly when each is
  // held by the model, none comes twice (each held allocation is stamped
  // with this comparison's number as it is met) and there are as many as
  // the model holds. That is the sorted lists' equality, without building
  // or sorting either on a passing run (a sort per op, issue 13).
  const std::uint64_t stamp = ++comparisons_;
  bool same_ids = true;
  std::size_t core_count = 0;
  std::optional<AllocationId> differs; // The first compared allocation that differs.
  device.memory().for_each_allocation([&](const AllocationInfo& info) {
    ++core_count;
    const Allocation* model = find(info.id);
    if (model == nullptr || model->state == State::gone || model->seen == stamp) {
      same_ids = false; // Not the model's, or met twice: reported below.
      return;
    }
    model->seen = stamp;
    if (differs || (touched != nullptr &&
                    std::find(touched->begin(), touched->end(), info.id) == touched->end())) {
      return;
    }
    if (info.size != model->size || !same_claims(info.id, *info.taint)) {
      differs = info.id;
      return;
    }
    if (!values) {
      return;
    }
    if (!same_values(*model, info.data)) {
      differs = info.id;
    }
  });
  if (!same_ids || core_count != held_.size()) {
    std::vector<std::uint64_t> core_ids;
    device.memory().for_each_allocation(
        [&](const AllocationInfo& info) { core_ids.push_back(info.id.raw()); });
    std::sort(core_ids.begin(), core_ids.end());
    std::vector<std::uint64_t> model_ids;
    for (const AllocationId id : allocations()) {
      model_ids.push_back(id.raw());
    }
    auto list = [](const std::vector<std::uint64_t>& ids) {
      std::string out;
      for (const std::uint64_t id : ids) {
        out += " " + std::to_string(id);
      }
      return out;
    };
    return "P1: the manager holds allocations" + list(core_ids) + ", the model" + list(model_ids);
  }
  if (differs) {
    return mismatch(device, *differs, values);
  }

  // The graph: exactly the live failures, with their errors, tags and skips.
  ErrorGraph& graph = device.graph();
  if (graph.next_id() != next_failure()) {
    return "G1/S4: the next failure id is " + std::to_string(graph.next_id().raw()) +
           ", the model " + std::to_string(next_failure_);
  }
  std::vector<std::uint64_t>& core_failures = scratch_ids_;
  core_failures.clear();
  reserve_first(core_failures);
  graph.for_each([&](FailureId failure, const Error&, std::uint64_t) {
    core_failures.push_back(failure.raw());
  });
  if (!std::is_sorted(core_failures.begin(), core_failures.end())) {
    std::sort(core_failures.begin(), core_failures.end());
  }
  const bool same_failures =
      core_failures.size() == failures_.size() && graph.size() == failures_.size() &&
      std::equal(core_failures.begin(), core_failures.end(), failures_.begin(),
                 [](std::uint64_t raw, const auto& entry) { return raw == entry.first; });
  if (!same_failures) {
    std::string text = "R1-R3: the graph holds " + std::to_string(graph.size()) + " failures:";
    for (const std::uint64_t raw : core_failures) {
      text += " " + std::to_string(raw);
    }
    text += "; the model:";
    for (const auto& [raw, failure] : failures_) {
      text += " " + std::to_string(raw);
    }
    return text;
  }
  // Every failure's carriers (R1) in one pass over the allocations, rather
  // than tags(id)'s pass per failure: this runs after every fuzzed op. Each
  // allocation's owners list (Allocation::owners) is derived from its bytes
  // again only when a write changed them; a whole-state comparison derives
  // every one again and checks the kept lists against it. The owners seen
  // are a handful (scratch_carriers_, kept between calls), so each is found
  // by a scan.
  std::vector<Carriers>& carriers = scratch_carriers_;
  carriers.clear();
  reserve_first(carriers);
  for (const std::size_t index : held_) {
    const Allocation& allocation = allocations_[index];
    if (touched == nullptr && allocation.owners_known) {
      std::vector<std::uint64_t>& derived = scratch_owners_;
      derive_owners(allocation, derived);
      if (derived != allocation.owners) {
        throw std::logic_error("model: an allocation's owners list is stale: a write to its "
                               "bytes bypassed writers_to_change");
      }
    }
    for (const std::uint64_t owner : owners_of(allocation)) {
      const auto found = std::find_if(carriers.begin(), carriers.end(),
                                      [&](const Carriers& entry) { return entry.owner == owner; });
      if (found == carriers.end()) {
        carriers.push_back(Carriers{owner, 1});
      } else {
        ++found->count;
      }
    }
  }
  for (const auto& [raw, failure] : failures_) {
    const FailureId id = FailureId::from_raw(raw);
    const Error* error = graph.error(id);
    if (error == nullptr || !(*error == failure.error)) {
      return "G4: " + to_string(id) + " has error " +
             (error != nullptr ? "{" + to_string(*error) + "}" : std::string("none")) +
             ", the model {" + to_string(failure.error) + "}";
    }
    const auto carried = std::find_if(carriers.begin(), carriers.end(), [&](const Carriers& entry) {
      return entry.owner == id.raw();
    });
    const std::uint64_t expected_tags = carried != carriers.end() ? carried->count : 0;
    if (graph.tags(id) != expected_tags) {
      return "R1: " + to_string(id) + " has " + std::to_string(graph.tags(id)) +
             " tags, the model " + std::to_string(expected_tags);
    }
    if (graph.skips_recorded(id) != failure.records.size()) {
      return "G7: " + to_string(id) + " recorded " + std::to_string(graph.skips_recorded(id)) +
             " skips, the model " + std::to_string(failure.records.size());
    }
    // G7: core's kept records against the model's newest, in place
    // (for_each_skip_record; copied only to describe a difference).
    const std::size_t first =
        failure.records.size() > kept_skip_records ? failure.records.size() - kept_skip_records : 0;
    const std::vector<SkipRecord>& records = failure.records;
    std::size_t at = first;
    bool same_records = true;
    graph.for_each_skip_record(id, [&](const SkipRecord& record) {
      same_records = same_records && at < records.size() && record == records[at];
      ++at;
    });
    if (!same_records || at != records.size()) {
      return "G7: " + to_string(id) + " keeps " + describe(graph.skip_records(id)) +
             ", the model " + describe(skip_records(id));
    }
  }
  return std::nullopt;
}

} // namespace taintpool::model

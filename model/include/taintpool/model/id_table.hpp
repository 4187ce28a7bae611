// IdTable: values keyed by ids that are only ever handed out ascending, in
// one vector sorted by id.
//
// Why it is shaped so. DeviceModel keeps its live failures by raw id. A
// std::map took a node per minted failure and freed it when the failure was
// buried: the model's largest allocation site in device_fuzzer (issue 13:
// 652 of 9,075 mallocs over forty inputs, 7%). Ids are minted counting up
// and inserted as minted, so a vector sorted by id answers the same
// questions: find is a binary search, iteration runs in ascending id (the
// order the map gave, which the model's comparisons and messages rely on),
// and its capacity stays for the table's life, so a minted id costs an
// allocation only when the table outgrows what it ever held.
//
// What it costs: erase moves the entries after it down one (a model holds
// tens of live failures; bury() erases with erase_if, one pass for all).
// What it guarantees: the subset of std::map's interface the model uses,
// with the same answers; emplace refuses an id not above the last
// (std::logic_error), which would break the order. References and
// iterators die on emplace and erase, so none may be held across either.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace taintpool::model {

template <class Value>
class IdTable {
 public:
  /// Entries the first emplace makes room for.
  static constexpr std::size_t kFirstRoom = 8;

  using value_type = std::pair<std::uint64_t, Value>;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  /// Adds `value` under `id`, which must be above every id held.
  void emplace(std::uint64_t id, Value value) {
    if (!entries_.empty() && entries_.back().first >= id) {
      throw std::logic_error("IdTable: ids must be added in ascending order");
    }
    // Room for eight at the first entry: grown from one, a model's table
    // (built per fuzzer input) regrew two or three times, each an
    // allocation ASan pays for (issue 13).
    if (entries_.capacity() == 0) {
      entries_.reserve(kFirstRoom);
    }
    entries_.emplace_back(id, std::move(value));
  }

  [[nodiscard]] iterator find(std::uint64_t id) { return entries_.begin() + position(id); }
  [[nodiscard]] const_iterator find(std::uint64_t id) const {
    return entries_.begin() + position(id);
  }
  [[nodiscard]] std::size_t count(std::uint64_t id) const { return find(id) != end() ? 1 : 0; }

  /// The value under `id`; std::out_of_range if none, as std::map::at.
  [[nodiscard]] Value& at(std::uint64_t id) {
    const iterator found = find(id);
    if (found == end()) {
      throw std::out_of_range("IdTable::at: no such id");
    }
    return found->second;
  }
  [[nodiscard]] const Value& at(std::uint64_t id) const {
    const const_iterator found = find(id);
    if (found == end()) {
      throw std::out_of_range("IdTable::at: no such id");
    }
    return found->second;
  }

  /// Removes one entry; the entry after it (or end()).
  iterator erase(const_iterator at) { return entries_.erase(at); }
  /// Removes every entry `drop(id, value)` selects, in one pass, in order.
  template <class Drop>
  void erase_if(Drop&& drop) {
    std::erase_if(entries_,
                  [&](const value_type& entry) { return drop(entry.first, entry.second); });
  }

  /// Swaps the entries' list with `room` (a DeviceModel::Room's): how a
  /// table made later takes over an earlier one's capacity. Whoever gets
  /// entries it must not keep empties them (erase_if).
  void trade_room(std::vector<value_type>& room) noexcept { entries_.swap(room); }

  [[nodiscard]] iterator begin() noexcept { return entries_.begin(); }
  [[nodiscard]] iterator end() noexcept { return entries_.end(); }
  [[nodiscard]] const_iterator begin() const noexcept { return entries_.begin(); }
  [[nodiscard]] const_iterator end() const noexcept { return entries_.end(); }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }

 private:
  /// Where `id` sits, or entries_.size() when it is absent.
  [[nodiscard]] std::ptrdiff_t position(std::uint64_t id) const {
    const auto found = std::lower_bound(
        entries_.begin(), entries_.end(), id,
        [](const value_type& entry, std::uint64_t key) { return entry.first < key; });
    const auto end = found != entries_.end() && found->first == id ? found : entries_.end();
    return end - entries_.begin();
  }

  std::vector<value_type> entries_;
};

} // namespace taintpool::model

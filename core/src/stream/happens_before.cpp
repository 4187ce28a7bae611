#include <taintpool/stream/happens_before.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace taintpool {

HappensBefore::HappensBefore()
    : seq_(1, 0)
    , completed_(1, 0)
    , clock_(1, 0)
    , free_(1, false) {
}

void HappensBefore::clear() noexcept {
  // Shrinking a vector destroys its tail and keeps the block: no
  // allocation. Slot 0 then reads as the constructor set it.
  seq_.resize(1);
  completed_.resize(1);
  clock_.resize(1);
  free_.resize(1);
  seq_[0] = 0;
  completed_[0] = 0;
  clock_[0] = 0;
  free_[0] = false;
  records_.clear();
}

std::uint32_t HappensBefore::add_stream() {
  const std::size_t width = seq_.size();
  for (std::uint32_t slot = 0; slot < width; ++slot) {
    if (free_[slot]) {
      free_[slot] = false;
      std::fill_n(clock_.begin() + static_cast<std::ptrdiff_t>(slot * width), width, 0);
      return slot;
    }
  }
  const auto slot = static_cast<std::uint32_t>(width);
  // The wider clock matrix is built aside and every table reserved first,
  // so that a throw leaves the sizes consistent.
  std::vector<std::uint64_t> clock((width + 1) * (width + 1), 0);
  for (std::size_t waiter = 0; waiter < width; ++waiter) {
    std::copy_n(clock_.begin() + static_cast<std::ptrdiff_t>(waiter * width), width,
                clock.begin() + static_cast<std::ptrdiff_t>(waiter * (width + 1)));
  }
  seq_.reserve(slot + 1);
  completed_.reserve(slot + 1);
  free_.reserve(slot + 1);
  clock_ = std::move(clock);
  seq_.push_back(0);
  completed_.push_back(0);
  free_.push_back(false);
  return slot;
}

void HappensBefore::remove_stream(std::uint32_t slot) {
  if (slot == 0 || slot >= free_.size() || free_[slot]) {
    throw std::logic_error("HappensBefore: slot " + std::to_string(slot) +
                           " is not a removable stream");
  }
  // The stream was finished: all its work is complete. Its seq keeps
  // counting if the slot is reused, so old points stay comparable.
  completed_[slot] = seq_[slot];
  free_[slot] = true;
}

void HappensBefore::plan_one(std::uint32_t stream, const StreamAccess& access, bool write,
                             std::uint32_t binding, std::vector<Hazard>& hazards) const {
  if (access.range.empty()) {
    return;
  }
  const Record* record = find(access.allocation);
  if (record == nullptr) {
    if (access.home == stream || track_all_) {
      // Only its home stream touched it: queue order suffices. Or every
      // allocation is tracked, and one without a record has nothing
      // outstanding (see materialise()).
      return;
    }
    // As if the home stream wrote every byte at its tail (see the header).
    const StreamPoint home{access.home, seq_[access.home], 0};
    if (!ordered_before(home, stream)) {
      hazards.push_back(Hazard{write ? Conflict::WriteAfterWrite : Conflict::ReadAfterWrite, write,
                               binding, home, access.allocation, access.range});
    }
    return;
  }
  for (const Run& run : record->runs) {
    if (run.end <= access.range.begin() || run.begin >= access.range.end()) {
      continue;
    }
    const ByteRange bytes = ByteRange::of(std::max(run.begin, access.range.begin()),
                                          std::min(run.end, access.range.end()));
    for (const StreamPoint& writer : run.writers) {
      if (!ordered_before(writer, stream)) {
        hazards.push_back(Hazard{write ? Conflict::WriteAfterWrite : Conflict::ReadAfterWrite,
                                 write, binding, writer, access.allocation, bytes});
      }
    }
    if (write) {
      for (const StreamPoint& reader : run.readers) {
        if (!ordered_before(reader, stream)) {
          hazards.push_back(
              Hazard{Conflict::WriteAfterRead, true, binding, reader, access.allocation, bytes});
        }
      }
    }
  }
}

void HappensBefore::plan(std::uint32_t stream, std::span<const StreamAccess> reads,
                         std::span<const StreamAccess> writes, std::vector<Hazard>& hazards) const {
  for (std::uint32_t index = 0; index < reads.size(); ++index) {
    plan_one(stream, reads[index], false, index, hazards);
  }
  for (std::uint32_t index = 0; index < writes.size(); ++index) {
    plan_one(stream, writes[index], true, index, hazards);
  }
}

void HappensBefore::ordered(std::uint32_t waiter, std::uint32_t source, std::uint64_t source_seq) {
  const std::size_t width = seq_.size();
  std::uint64_t* into = clock_.data() + waiter * width;
  const std::uint64_t* from = clock_.data() + source * width;
  for (std::size_t slot = 0; slot < width; ++slot) {
    into[slot] = std::max(into[slot], from[slot]);
  }
  into[source] = std::max(into[source], source_seq);
}

void HappensBefore::completed(std::uint32_t stream, std::uint64_t seq) {
  completed_[stream] = std::max(completed_[stream], std::min(seq, seq_[stream]));
}

HappensBefore::Record& HappensBefore::materialise(const StreamAccess& access, bool creating) {
  if (Record* found = records_.find(access.allocation.raw())) {
    return *found;
  }
  if (access.allocation.raw() == 0) {
    throw std::logic_error("HappensBefore: an access names no allocation (id 0)");
  }
  Record record;
  record.id = access.allocation.raw();
  record.home = access.home;
  // The memory's earlier use: everything its home stream queued so far —
  // except when every allocation is tracked and this one is not being
  // created: its record was pruned because every access in it completed,
  // or it was made while the Device had one stream, whose work the second
  // stream's creation finished. Then nothing earlier is outstanding, and
  // naming the home stream's tail would report its unrelated work as a
  // race (O4).
  const std::uint64_t earlier = creating || !track_all_ ? seq_[access.home] : 0;
  if (access.size != 0) {
    Run whole{0, access.size, {}, {}};
    if (earlier != 0) {
      whole.writers.push_back(StreamPoint{access.home, earlier, 0});
    }
    record.runs.push_back(std::move(whole));
  }
  return *records_.insert(std::move(record));
}

void HappensBefore::created(const StreamAccess& allocation) {
  if (track_all_) {
    static_cast<void>(materialise(allocation, true));
  }
}

std::size_t HappensBefore::split(Record& record, ByteRange range) {
  auto& runs = record.runs;
  if (range.begin() == 0 && (runs.empty() || range.end() >= runs.back().end)) {
    return 0; // A whole-buffer binding, the common case: both ends are boundaries.
  }
  auto cut = [&](std::uint64_t at) {
    // A boundary already: the allocation's ends (a whole-buffer binding,
    // the common case) need no scan.
    if (at == 0 || runs.empty() || at >= runs.back().end) {
      return;
    }
    for (std::size_t index = 0; index < runs.size(); ++index) {
      if (runs[index].begin < at && at < runs[index].end) {
        Run right = runs[index];
        right.begin = at;
        runs[index].end = at;
        runs.insert(runs.begin() + static_cast<std::ptrdiff_t>(index) + 1, std::move(right));
        return;
      }
    }
  };
  cut(range.begin());
  cut(range.end());
  std::size_t first = 0;
  while (first < runs.size() && runs[first].end <= range.begin()) {
    ++first;
  }
  return first;
}

StreamPoint HappensBefore::commit(std::uint32_t stream, std::uint64_t launch,
                                  std::span<const StreamAccess> reads,
                                  std::span<const StreamAccess> writes) {
  const StreamPoint point{stream, seq_[stream] + 1, launch};
  auto touch = [&](const StreamAccess& access, bool write) {
    if (access.range.empty()) {
      return;
    }
    // One probe: the record if there is one, else none needed on the home
    // stream (fast path), else a new one.
    Record* found = find(access.allocation);
    if (found == nullptr && !track_all_ && access.home == stream) {
      return;
    }
    Record& record = found != nullptr ? *found : materialise(access, false);
    const std::size_t first = split(record, access.range);
    for (std::size_t index = first;
         index < record.runs.size() && record.runs[index].begin < access.range.end(); ++index) {
      Run& run = record.runs[index];
      if (write) {
        // The earlier writers this write is ordered after are overwritten
        // for good. One it is not ordered after raced with it (detect mode
        // only: ordering mode waited for every one) and may still land
        // later, so it stays a writer: the next access races with it too.
        if (run.writers.size() == 1 && ordered_before(run.writers.front(), stream)) {
          run.writers.front() = point; // Ordering mode's one writer, replaced in place.
        } else {
          std::erase_if(run.writers,
                        [&](const StreamPoint& writer) { return ordered_before(writer, stream); });
          run.writers.push_back(point);
        }
        if (track_all_) {
          // A read before this write may still run after a later write on
          // another stream — even this launch's own read, or one this
          // stream ordered before the write — so detect mode keeps every
          // reader until it is known complete (O4).
          std::erase_if(run.readers, [&](const StreamPoint& reader) {
            return reader.seq <= completed_[reader.stream];
          });
        } else {
          run.readers.clear(); // Ordering mode: waiting for this write waits for them.
        }
        continue;
      }
      if (track_all_) {
        // Detect mode names every reader a later write races with (O4), so
        // an older reader on the same stream stays until known complete.
        std::erase_if(run.readers, [&](const StreamPoint& reader) {
          return reader.seq <= completed_[reader.stream];
        });
        if (run.readers.empty() || !(run.readers.back() == point)) {
          run.readers.push_back(point);
        }
        continue;
      }
      // Ordering mode: the newest reader per stream; waiting for it waits
      // for the older ones (O2).
      const auto same =
          std::find_if(run.readers.begin(), run.readers.end(),
                       [&](const StreamPoint& reader) { return reader.stream == stream; });
      if (same != run.readers.end()) {
        *same = point;
      } else {
        run.readers.push_back(point);
      }
    }
    // Neighbouring runs that now say the same thing become one.
    auto& runs = record.runs;
    for (std::size_t index = 1; index < runs.size();) {
      if (runs[index - 1].writers == runs[index].writers &&
          runs[index - 1].readers == runs[index].readers) {
        runs[index - 1].end = runs[index].end;
        runs.erase(runs.begin() + static_cast<std::ptrdiff_t>(index));
      } else {
        ++index;
      }
    }
  };
  // Reads first: a binding both read and written ends with the write.
  for (const StreamAccess& access : reads) {
    touch(access, false);
  }
  for (const StreamAccess& access : writes) {
    touch(access, true);
  }
  seq_[stream] = point.seq;
  return point;
}

std::size_t HappensBefore::prune_completed() {
  auto complete = [&](const StreamPoint& point) {
    return point.seq == 0 || point.seq <= completed_[point.stream];
  };
  auto done = [&](const Record& record) {
    return std::all_of(record.runs.begin(), record.runs.end(), [&](const Run& run) {
      return std::all_of(run.writers.begin(), run.writers.end(), complete) &&
             std::all_of(run.readers.begin(), run.readers.end(), complete);
    });
  };
  // Ids first, then erase: an erase shifts nodes back, under a visit.
  std::vector<std::uint64_t> finished;
  records_.for_each([&](const Record& record) {
    if (done(record)) {
      finished.push_back(record.id);
    }
  });
  for (const std::uint64_t id : finished) {
    records_.erase(records_.find(id));
  }
  return finished.size();
}

void HappensBefore::check_invariants() const {
  auto fail = [](const std::string& what) {
    throw std::logic_error("HappensBefore (O1): " + what);
  };
  const std::size_t width = seq_.size();
  if (width != completed_.size() || width != free_.size()) {
    fail("per-stream tables of different sizes");
  }
  if (clock_.size() != width * width) {
    fail("a clock matrix of the wrong shape");
  }
  for (std::size_t slot = 0; slot < width; ++slot) {
    if (completed_[slot] > seq_[slot]) {
      fail("stream slot " + std::to_string(slot) + " completed work never queued");
    }
    for (std::size_t other = 0; other < seq_.size(); ++other) {
      if (clock_[slot * width + other] > seq_[other]) {
        fail("a clock is ahead of the work queued");
      }
    }
  }
  auto valid = [&](const StreamPoint& point) {
    return point.stream < seq_.size() && point.seq <= seq_[point.stream];
  };
  records_.check_invariants("HappensBefore (O1)");
  records_.for_each([&](const Record& record) {
    const std::uint64_t allocation = record.id;
    std::uint64_t expected = 0;
    for (const Run& run : record.runs) {
      if (run.begin != expected || run.end <= run.begin) {
        fail("the runs of allocation " + std::to_string(allocation) + " do not tile it");
      }
      expected = run.end;
      for (const StreamPoint& writer : run.writers) {
        if (!valid(writer) || writer.seq == 0) {
          fail("a writer newer than its stream's tail, or at seq 0");
        }
      }
      if (!track_all_ && run.writers.size() > 1) {
        fail("two writers of one run in ordering mode (one was not waited for)");
      }
      for (std::size_t index = 0; index < run.readers.size(); ++index) {
        if (!valid(run.readers[index])) {
          fail("a reader newer than its stream's tail");
        }
        for (std::size_t other = index + 1; other < run.readers.size(); ++other) {
          if (run.readers[index] == run.readers[other] ||
              (!track_all_ && run.readers[index].stream == run.readers[other].stream)) {
            fail("two readers of one stream on one run in ordering mode, or one reader twice");
          }
        }
      }
    }
  });
}

} // namespace taintpool

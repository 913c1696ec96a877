// The plan-time check that every rank runs the same sequence of every-rank
// communication nodes (Session calls it for each new plan).
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/mpi_detail.h"
#include "mpi_ops/watchdog.h"

namespace adgraph {
namespace {

using mpi_detail::check_mpi;
using mpi_detail::count_of;

// FNV-1a: a hash that is the same in every process.
uint64_t fingerprint(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The descriptor as shown: its name and its signature.
std::string without_name_end(std::string d) {
  const std::size_t end = d.find(CommContext::kNameEnd);
  if (end != std::string::npos) d.erase(end, 1);
  return d;
}

}  // namespace

void Communicator::check_same_sequence(
    const std::vector<std::string>& descriptors) {
  if (size_ == 1) return;
  mpi_detail::LabelWatch watch(*watchdog_,
                               "the cross-rank check of a new plan's " +
                                   std::to_string(descriptors.size()) +
                                   " collective(s), first " +
                                   without_name_end(descriptors.front()));
  // [n, -n] under MAX gives the longest and shortest sequence.
  int64_t counts[2] = {static_cast<int64_t>(descriptors.size()),
                       -static_cast<int64_t>(descriptors.size())};
  check_mpi(
      MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT64_T, MPI_MAX, mpi().comm),
      "MPI_Allreduce");
  const int64_t longest = counts[0], shortest = -counts[1];
  // [h, ~h] under MAX gives the largest and (complemented) smallest hash.
  std::vector<uint64_t> hashes(2 * shortest);
  for (int64_t i = 0; i < shortest; ++i) {
    const std::string& d = descriptors[i];
    const std::size_t end = d.find(kNameEnd);
    hashes[2 * i] =
        fingerprint(end == std::string::npos ? d : d.substr(end + 1));
    hashes[2 * i + 1] = ~hashes[2 * i];
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE,
                          hashes.data(),
                          count_of(2 * shortest),
                          MPI_UINT64_T,
                          MPI_MAX,
                          mpi().comm),
            "MPI_Allreduce");
  int64_t first = shortest == longest ? -1 : shortest;
  for (int64_t i = 0; i < shortest; ++i) {
    if (hashes[2 * i] != ~hashes[2 * i + 1]) {
      first = i;
      break;
    }
  }
  if (first < 0) return;

  // Every rank learns every rank's entry at `first`, so all raise one message.
  const std::string mine = first < static_cast<int64_t>(descriptors.size())
                               ? without_name_end(descriptors[first])
                               : std::string("no further collective");
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(size_), offsets(size_);
  check_mpi(MPI_Allgather(
                &length, 1, MPI_INT, lengths.data(), 1, MPI_INT, mpi().comm),
            "MPI_Allgather");
  int total = 0;
  for (int r = 0; r < size_; ++r) offsets[r] = total, total += lengths[r];
  std::string all(total, '\0');
  check_mpi(MPI_Allgatherv(mine.data(),
                           length,
                           MPI_CHAR,
                           all.data(),
                           lengths.data(),
                           offsets.data(),
                           MPI_CHAR,
                           mpi().comm),
            "MPI_Allgatherv");
  std::string message =
      "ranks would run different collectives" +
      (name_ == "world" ? std::string()
                        : " on communicator " + name_ + " (ranks within it)") +
      ": collective #" + std::to_string(first) + " is";
  for (int r = 0; r < size_; ++r) {
    message += std::string(r == 0 ? " " : "; ") + "on rank " +
               std::to_string(r) + " " + all.substr(offsets[r], lengths[r]);
  }
  throw RunError(message);
}

}  // namespace adgraph

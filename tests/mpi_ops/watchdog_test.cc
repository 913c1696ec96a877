// The watchdog on its own: what it says of the call it watches, when a
// call's watch is its own, and where its deadline comes from. (That it ends
// a stalled job is tested end to end by stalled_recv, stalled_wait and
// stalled_reduction.)
#include "mpi_ops/watchdog.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "adgraph.h"

namespace adgraph {
namespace {

using mpi_detail::CallWatch;
using mpi_detail::LabelWatch;
using mpi_detail::Watchdog;

// ADGRAPH_COMM_DEADLINE set to `value` (unset for nullptr) while it lives;
// the test launcher's own value comes back after.
class DeadlineVariable {
 public:
  explicit DeadlineVariable(const char* value) {
    if (const char* old = std::getenv(kName)) old_ = old;
    had_ = std::getenv(kName) != nullptr;
    if (value == nullptr) {
      unsetenv(kName);
    } else {
      setenv(kName, value, 1);
    }
  }
  ~DeadlineVariable() {
    if (had_) {
      setenv(kName, old_.c_str(), 1);
    } else {
      unsetenv(kName);
    }
  }

 private:
  static constexpr const char* kName = "ADGRAPH_COMM_DEADLINE";
  std::string old_;
  bool had_ = false;
};

TEST(Watchdog, DescribesALabelAndNamesAnyCommunicatorButTheWorld) {
  Watchdog world("world", 0);
  world.start("the split of communicator world (color 2)");
  EXPECT_EQ(world.describe(), "the split of communicator world (color 2)");
  Watchdog row("split(color 1) of world", 0);
  {
    LabelWatch watch(row, "a check");
    EXPECT_TRUE(row.watching());
    EXPECT_EQ(row.describe(),
              "a check on communicator split(color 1) of world");
  }
  EXPECT_FALSE(row.watching());
}

TEST(Watchdog, DescribesANodeByNameOpCommunicationNumberAndPeer) {
  Graph g;
  Value x = g.placeholder("x", {3});
  Value total = mpi_allreduce(x);  // communication #0
  NodeOptions options;
  options.name = "from_two";
  Value r = g.add_node("mpi_recv", {total}, {{"src", 0}, {"tag", 7}}, options);
  Watchdog w("world", 0);
  w.start(r.node());
  EXPECT_EQ(w.describe(),
            "node \"from_two\" (mpi_recv, communication #1, peer rank 0 (src "
            "of \"from_two\"))");
  w.start(total.node());
  EXPECT_EQ(
      w.describe(),
      "node \"" + total.node().name + "\" (mpi_allreduce, communication #0)");
  w.stop();
}

TEST(Watchdog, ACallIsWatchedOnlyWhenNoOtherWatchCoversIt) {
  Watchdog w("world", 0);
  {
    CallWatch call(w, "MPI_Bcast", 12);
    EXPECT_TRUE(w.watching());
    EXPECT_EQ(w.describe(),
              "MPI_Bcast (n = 12) outside any graph node (the optimizer's or "
              "the program's own call)");
  }
  EXPECT_FALSE(w.watching());
  LabelWatch outer(w, "the completion of 3 send(s) of a loop step");
  {
    CallWatch inner(w, "MPI_Wait", 1);  // covered: not its own
    EXPECT_EQ(w.describe(), "the completion of 3 send(s) of a loop step");
  }
  EXPECT_TRUE(w.watching()) << "the inner call ended the outer watch";
}

TEST(Watchdog, NamesEachMissingPeerOnceUntilItArrives) {
  Watchdog w("world", 0);
  w.start("a halo exchange");
  w.set_peer(0, 3);
  w.set_peer(1, 5);
  w.set_peer(2, 3);  // a peer both sent to and received from
  EXPECT_EQ(w.describe(),
            "a halo exchange; no message yet from or to rank 3, 5 "
            "(unreachable, or stopped)");
  w.set_peer(0, -1);
  w.set_peer(2, -1);
  EXPECT_EQ(w.describe(),
            "a halo exchange; no message yet from or to rank 5 (unreachable, "
            "or stopped)");
  w.set_peer(1, -1);
  EXPECT_EQ(w.describe(), "a halo exchange");
  w.stop();
}

TEST(Watchdog, TakesItsDeadlineFromTheEnvironmentAndChecksIt) {
  {
    DeadlineVariable unset(nullptr);
    Watchdog plain("world", 0);
    EXPECT_EQ(plain.deadline(), 0.0);
  }
  {
    DeadlineVariable variable("2.5");
    Watchdog from_environment("world", 0);
    EXPECT_EQ(from_environment.deadline(), 2.5);
    from_environment.set_deadline(0);
    EXPECT_EQ(from_environment.deadline(), 0.0);
  }
  for (const char* bad : {"soon", "-1", "3s"}) {
    DeadlineVariable variable(bad);
    try {
      Watchdog refused("world", 0);
      ADD_FAILURE() << "ADGRAPH_COMM_DEADLINE=" << bad << " was accepted";
    } catch (const OptionsError& e) {
      EXPECT_EQ(std::string(e.what()),
                "ADGRAPH_COMM_DEADLINE must be a number of seconds >= 0, got "
                "\"" +
                    std::string(bad) + "\"");
    }
  }
  DeadlineVariable unset(nullptr);
  Watchdog w("world", 0);
  for (double bad : {-1.0, std::numeric_limits<double>::quiet_NaN()}) {
    try {
      w.set_deadline(bad);
      ADD_FAILURE() << "deadline " << bad << " was accepted";
    } catch (const OptionsError& e) {
      EXPECT_EQ(e.field(), "deadline_seconds");
    }
  }
  EXPECT_EQ(w.deadline(), 0.0);
}

TEST(Watchdog, ACallWithinTheDeadlineLetsTheProcessGoOn) {
  Watchdog w("world", 0);
  w.set_deadline(60);
  w.start("a short call");
  w.check();  // well within 60 s: returns
  w.stop();
  w.set_deadline(1e-9);
  w.check();  // nothing watched: returns whatever the deadline
  EXPECT_FALSE(w.watching());
  EXPECT_EQ(w.deadline(), 1e-9);
}

}  // namespace
}  // namespace adgraph

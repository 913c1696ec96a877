// A kernel that throws on the last rank only, before an allreduce the
// others wait in (at top level, or inside a loop body with "loop" as the
// argument). The failing rank catches the error and carries on, as a
// program might; the others would wait for its allreduce until the 60 s
// deadline. Session::run must end the job within seconds instead
// (CommContext::agree_on_failure), with the kernel's message. (The failing
// rank then sleeps rather than call MPI, so that without the agreement the
// job would hang past the test's timeout.)
#include <chrono>
#include <cstring>
#include <thread>

#include "adgraph.h"

using namespace adgraph;

namespace {

// y = x, except that it throws on the last rank.
void register_fail_on_last() {
  OpDef def;
  def.name = "test_fail_on_last";
  def.inputs = {"x"};
  def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  def.compute = [](KernelContext& c) {
    auto world = Communicator::world();
    if (world->rank() == world->size() - 1) {
      throw RunError("deliberate failure on the last rank",
                     c.node().name,
                     c.node().op_name());
    }
    c.output(0).array() = c.input(0).array();
  };
  def.gradient = [](const GradientContext& c) { return Values{c.grad()}; };
  register_op(def);
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  register_fail_on_last();
  Communicator::world()->set_deadline(60.0);
  const bool in_loop = argc > 1 && std::strcmp(argv[1], "loop") == 0;
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y;
  if (in_loop) {
    y = loop(3, {x}, {}, [](const LoopArgs& a) {
          Value v = a.carries[0].graph().add_node(
              "test_fail_on_last", {a.carries[0]}, {}, NodeOptions{"picky"});
          return LoopStep{{mpi_allreduce(v)}, {}};
        }).carries[0];
  } else {
    y = mpi_allreduce(
        g.add_node("test_fail_on_last", {x}, {}, NodeOptions{"picky"}));
  }
  Session s(g);
  try {
    s.run(y, {{x, Tensor({1.0, 2.0})}});
  } catch (const RunError&) {
    // carry on, as if the error were this rank's own business
  }
  std::this_thread::sleep_for(std::chrono::seconds(45));
  return 0;
}

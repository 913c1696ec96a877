// forward_mode_batch: values and directional derivatives of f(x, y) over a
// batch of inputs spread across the ranks, in forward mode.
//
//   mpirun -n 4 forward_mode_batch                      # f(x, y) = x + y
//   mpirun -n 3 forward_mode_batch --function product --inputs batch.json
//
// Rank 0 holds the batch: each input is (value, tangent) for x and for y.
// The graph scatters the batch (mpi_scatter), every rank evaluates f on its
// share, and mpi_gather brings the values back to rank 0 in input order.
// jvp() of the gathered values with respect to rank 0's batch, in the
// direction of rank 0's tangents, is the same program in forward mode: the
// tangents travel with the values through the scatter and the gather.
//
// --inputs FILE: {"x": [[value, tangent], ...], "y": [[value, tangent], ...]}
// (the default is the four inputs below). A batch that does not divide by
// the rank count is padded with (1, 0) entries, which are dropped again.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "adgraph.h"
#include "examples/command_line.h"
#include "examples/example_check.h"

using namespace adgraph;

namespace {

// f, its graph form, and its derivative written out by hand (the check).
struct Function {
  std::function<Value(Value, Value)> build;
  std::function<double(double, double)> value;
  // ∂f/∂x·ẋ + ∂f/∂y·ẏ
  std::function<double(double, double, double, double)> derivative;
};

const std::map<std::string, Function>& functions() {
  static const std::map<std::string, Function> table = {
      {"sum",
       {[](Value x, Value y) { return x + y; },
        [](double x, double y) { return x + y; },
        [](double, double, double tx, double ty) { return tx + ty; }}},
      {"product",
       {[](Value x, Value y) { return x * y; },
        [](double x, double y) { return x * y; },
        [](double x, double y, double tx, double ty) {
          return tx * y + x * ty;
        }}},
      {"sin_exp",
       {[](Value x, Value y) { return sin(x) * exp(y); },
        [](double x, double y) { return std::sin(x) * std::exp(y); },
        [](double x, double y, double tx, double ty) {
          return std::exp(y) * (std::cos(x) * tx + std::sin(x) * ty);
        }}},
  };
  return table;
}

const char* kDefaultInputs = R"({
  "x": [[5, 0.5], [6, 0.3], [7, 0.2], [8, 0.1]],
  "y": [[6, 1.5], [7, 2.5], [8, 3.5], [9, 4.5]]
})";

struct Batch {
  std::vector<double> x, tx, y, ty;
};

// Parses the batch; throws JsonError naming the file and the field.
Batch parse_batch(const std::string& text, const std::string& file) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw JsonError(e.what(), {}, {}, {}, file);
  }
  Batch b;
  for (const char* key : {"x", "y"}) {
    if (!doc.is_object() || !doc.contains(key) || !doc[key].is_array()) {
      throw JsonError(
          "expected a list of [value, tangent] pairs", {}, {}, key, file);
    }
    std::vector<double>& v = key[0] == 'x' ? b.x : b.y;
    std::vector<double>& t = key[0] == 'x' ? b.tx : b.ty;
    for (std::size_t i = 0; i < doc[key].size(); ++i) {
      const nlohmann::json& pair = doc[key][i];
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() ||
          !pair[1].is_number()) {
        throw JsonError("expected [value, tangent], got " + pair.dump(),
                        {},
                        {},
                        std::string(key) + "[" + std::to_string(i) + "]",
                        file);
      }
      v.push_back(pair[0].get<double>());
      t.push_back(pair[1].get<double>());
    }
  }
  if (b.x.size() != b.y.size() || b.x.empty()) {
    throw JsonError("x has " + std::to_string(b.x.size()) + " inputs and y " +
                        std::to_string(b.y.size()) +
                        "; they must be equal and non-empty",
                    {},
                    {},
                    "y",
                    file);
  }
  return b;
}

// `v` padded with `fill` to size × per_rank and shaped [size, per_rank].
Tensor stacked(std::vector<double> v, int size, int64_t per_rank, double fill) {
  v.resize(static_cast<std::size_t>(size * per_rank), fill);
  return Tensor({size, per_rank}, std::move(v));
}

// The batch's text: rank 0 reads the file and every rank parses the same
// text, so a bad file is the same error everywhere.
std::string batch_text(Communicator& comm, const std::string& inputs) {
  if (inputs.empty()) return kDefaultInputs;
  std::ostringstream content;
  bool readable = true;
  if (comm.rank() == 0) {
    std::ifstream in(inputs);
    readable = static_cast<bool>(in);
    content << in.rdbuf();
  }
  const std::string text =
      comm.bcast(readable ? content.str() : std::string("\x01"), 0);
  if (text == "\x01")
    throw JsonError("cannot read the file", {}, {}, {}, inputs);
  return text;
}

// Rank 0: each input's value and derivative, checked against the
// function's own formulas, and the JSON file.
void report(const std::string& function,
            const Batch& batch,
            const std::vector<Tensor>& out,
            int64_t per_rank,
            const std::string& output,
            examples::Checker& check,
            Communicator& comm) {
  const Function& f = functions().at(function);
  const int64_t n = static_cast<int64_t>(batch.x.size());
  nlohmann::json pairs = nlohmann::json::array();
  std::printf("f = %s over %lld inputs on %d ranks (%lld per rank)\n",
              function.c_str(),
              static_cast<long long>(n),
              comm.size(),
              static_cast<long long>(per_rank));
  for (int64_t i = 0; i < n; ++i) {
    const double x = batch.x[i], y = batch.y[i];
    std::printf("input %lld on rank %lld: f(%g, %g) = %g, derivative %g\n",
                static_cast<long long>(i),
                static_cast<long long>(i / per_rank),
                x,
                y,
                out[0][i],
                out[1][i]);
    check.expect("f", out[0][i], f.value(x, y));
    check.expect(
        "derivative", out[1][i], f.derivative(x, y, batch.tx[i], batch.ty[i]));
    pairs.push_back({out[0][i], out[1][i]});
  }
  if (output.empty()) return;
  std::ofstream file(output);
  file << nlohmann::json{{"function", function}, {"pairs", pairs}}.dump(2)
       << "\n";
  if (!file) comm.abort("forward_mode_batch: cannot write " + output, 1);
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  const int rank = comm->rank(), size = comm->size();
  const bool root = rank == 0;

  CLI::App app{
      "Values and directional derivatives of f(x, y) over a batch "
      "scattered across the ranks"};
  std::string function = "sum", inputs, output;
  app.add_option("--function", function, "sum, product or sin_exp")
      ->check(CLI::IsMember({"sum", "product", "sin_exp"}))
      ->capture_default_str();
  app.add_option("--inputs",
                 inputs,
                 "JSON {\"x\": [[value, tangent], ...], \"y\": [...]}");
  app.add_option("--output", output, "write the (value, derivative) pairs");
  if (auto code = examples::parse_command_line(app, argc, argv, root)) {
    return *code;
  }

  try {
    const Batch batch = parse_batch(batch_text(*comm, inputs),
                                    inputs.empty() ? "(default)" : inputs);
    const Function& f = functions().at(function);
    const int64_t n = static_cast<int64_t>(batch.x.size());
    const int64_t per_rank = (n + size - 1) / size;

    // The program: scatter, evaluate, gather; then its tangent program.
    Graph g;
    Value bx = g.placeholder("batch_x", {size, per_rank});
    Value by = g.placeholder("batch_y", {size, per_rank});
    Value tx = g.placeholder("tangent_x", {size, per_rank});
    Value ty = g.placeholder("tangent_y", {size, per_rank});
    Value values =
        mpi_gather(f.build(mpi_scatter(bx, 0), mpi_scatter(by, 0)), 0);
    Value derivatives = jvp({values}, {bx, by}, {tx, ty})[0];

    // Only rank 0's batch matters; the other ranks feed zeros.
    auto feed = [&](const std::vector<double>& v, double fill) {
      return root ? stacked(v, size, per_rank, fill)
                  : Tensor::zeros({size, per_rank});
    };
    Session session(g);
    auto out = session.run({values, derivatives},
                           {{bx, feed(batch.x, 1.0)},
                            {by, feed(batch.y, 1.0)},
                            {tx, feed(batch.tx, 0.0)},
                            {ty, feed(batch.ty, 0.0)}});
    examples::Checker check(*comm);
    if (root) report(function, batch, out, per_rank, output, check, *comm);
    return check.exit_code();
  } catch (const Error& e) {
    if (root) std::fprintf(stderr, "forward_mode_batch: %s\n", e.what());
    return 2;
  }
}

// adgraph-run: runs a JSON-described graph under mpirun.
//   mpirun -n 4 adgraph-run graph.json [--output FILE] [--all-ranks] [--check]
//   adgraph-run --list-ops
// The document format is described in driver/loader.h.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <vector>

#include "adgraph.h"
#include "builtin_ops.h"
#include "core/exec/plan_checks.h"
#include "core/output_file.h"
#include "core/tensor_json.h"
#include "driver/loader.h"
#include "mpi_ops/mpi_environment.h"

using namespace adgraph;
using nlohmann::json;

namespace {

json list_ops() {
  register_all_ops();
  json out = json::array();
  for (const OpDef* op : OpRegistry::global().all()) {
    json attrs = json::array();
    for (const AttrSpec& a : op->attrs) {
      json entry = {
          {"name", a.name}, {"type", attr_type_name(a.type)}, {"doc", a.doc}};
      entry["default"] =
          a.default_value.is_null() ? json("required") : a.default_value;
      attrs.push_back(entry);
    }
    out.push_back(
        {{"op", op->name},
         {"inputs", op->inputs},
         {"variadic", op->variadic},
         {"outputs",
          op->num_outputs == 0 ? json("per node") : json(op->num_outputs)},
         {"attrs", attrs},
         {"gradient", static_cast<bool>(op->gradient)},
         {"tangent", static_cast<bool>(op->tangent)},
         {"communication", op->communication},
         // Takes a node's "comm" field (a communicator of the document).
         {"comm", static_cast<bool>(op->communicator)},
         {"doc", op->doc}});
  }
  return out;
}

// Every rank's text, on rank 0 (empty elsewhere).
std::vector<std::string> gather_text(Communicator& comm,
                                     const std::string& mine) {
  std::vector<std::string> out;
  for (int r = 0; r < comm.size(); ++r) {
    const std::string text =
        comm.bcast(comm.rank() == r ? mine : std::string(), r);
    if (comm.rank() == 0) out.push_back(text);
  }
  return out;
}

// FNV-1a: the same in every process.
uint64_t fingerprint(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// True when every rank holds the same `text`. Collective.
bool same_on_every_rank(Communicator& comm, const std::string& text) {
  const double h = static_cast<double>(fingerprint(text) >> 12);
  return comm.allreduce_max(h) == comm.allreduce_min(h);
}

// Non-finite values written (as strings, see tensor_to_json), by result.
using NonFinite = std::map<std::string, int64_t>;

// --check: the plan's own checks (message pairing, loop steps, memory),
// then a summary of the document.
json check_summary(const std::string& file,
                   Communicator& comm,
                   Graph& g,
                   const driver::Document& d) {
  if (!d.fetch_values.empty()) {
    FeedMap feeds = d.feeds;
    for (std::size_t k = 0; k < d.optimize.variables.size(); ++k)
      feeds[d.optimize.variables[k]] = d.optimize.start[k];
    Session(g).check(d.fetch_values, feeds);
  }
  std::map<std::string, int> ops;
  // Each loop's schedule as it will run ("auto" and budgets resolved).
  json loops = json::object();
  for (int id = 0; id < g.num_nodes(); ++id) {
    ++ops[g.node(id).op_name()];
    if (g.node(id).loop && g.node(id).op_name() == "loop")
      loops[g.node(id).name] = loop_stats(Value(&g, id)).schedule;
  }
  // What "optimize.options" set, every field (the line searches' too).
  json options = nullptr;
  if (d.has_optimize) {
    const optim::LbfgsOptions& o = d.optimize.options;
    options = fields_json(field_values(optim::LbfgsOptions::fields(), o));
    options["line_search"] = fields_json(
        field_values(optim::LineSearchOptions::fields(), o.line_search));
    options["line_search_bounded"] = fields_json(field_values(
        optim::MoreThuenteOptions::fields(), o.line_search_bounded));
  }
  return {{"file", file},
          {"valid", true},
          {"options", options},
          {"nodes", g.num_nodes()},
          {"ops", ops},
          {"fetch", d.fetch},
          {"ranks", comm.size()},
          {"deadline_seconds", comm.deadline()},
          {"optimize", d.has_optimize},
          {"loops", loops}};
}

json run(const std::string& file,
         Communicator& comm,
         bool check_only,
         NonFinite& non_finite) {
  const std::string text = driver::read_document(file);
  if (!same_on_every_rank(comm, text)) {
    throw JsonError(
        "the ranks read different contents for this file (not on a shared "
        "file system, or changed while starting): every rank must load the "
        "same document",
        {},
        {},
        {},
        file);
  }
  const json doc = driver::parse_document(text, file);
  Graph g;
  g.set_same_on_every_rank(true);
  driver::Document d = driver::load_document(doc, file, g);
  if (check_only) return check_summary(file, comm, g, d);
  json result = json::object();
  FeedMap feeds = d.feeds;
  if (d.has_optimize) {
    const driver::Optimize& o = d.optimize;
    std::vector<Tensor> values = o.start;
    optim::LbfgsSummary s =
        o.bounded
            ? optim::minimize(o.objective,
                              o.variables,
                              values,
                              o.bounds,
                              feeds,
                              o.options,
                              o.layout)
            : optim::minimize(
                  o.objective, o.variables, values, feeds, o.options, o.layout);
    json minimizer = json::object();
    for (std::size_t k = 0; k < o.variables.size(); ++k) {
      minimizer[o.names[k]] =
          tensor_to_json(values[k], &non_finite["minimizer." + o.names[k]]);
      feeds[o.variables[k]] = values[k];
    }
    result["minimizer"] = minimizer;
    result["minimum"] = number_to_json(s.final_f, &non_finite["minimum"]);
    result["iterations"] = s.iterations;
    result["evaluations"] = s.evaluations;
    result["termination"] = optim::termination_name(s.termination);
    if (o.bounded) {
      result["method"] = "lbfgsb";
      result["active_bounds"] = s.active_bounds;
      result["projected_gradient_norm"] = number_to_json(
          s.gradient_norm, &non_finite["projected_gradient_norm"]);
    }
  }
  if (!d.fetch.empty()) {
    Session session(g);
    std::vector<Tensor> out = session.run(d.fetch_values, feeds);
    for (std::size_t k = 0; k < out.size(); ++k)
      result[d.fetch[k]] = tensor_to_json(out[k], &non_finite[d.fetch[k]]);
  }
  return result;
}

// Every rank was given the same command, and rank 0 can write `output`
// (when given); else OptionsError on every rank.
void check_command(Communicator& comm,
                   const std::string& command,
                   const std::string& output) {
  if (!same_on_every_rank(comm, command)) {
    throw OptionsError(
        "the ranks were given different command lines (graph, --output, "
        "--check, --all-ranks must be the same on every rank)");
  }
  if (output.empty()) return;
  // Rank 0 writes the result; every rank learns whether it can.
  std::string problem;
  if (comm.rank() == 0) {
    try {
      check_output_path(output, "--output");
    } catch (const OptionsError& e) {
      problem = e.detail();
    }
  }
  problem = comm.bcast(problem, 0);
  if (!problem.empty()) throw OptionsError(problem, {}, {}, "--output");
}

// Says on stderr which results held values JSON cannot write.
void report_non_finite(const Communicator& comm, const NonFinite& non_finite) {
  for (const auto& [name, count] : non_finite) {
    if (count == 0) continue;
    std::fprintf(stderr,
                 "adgraph-run: rank %d: %lld value(s) of \"%s\" are not "
                 "finite; written as the strings \"Infinity\", "
                 "\"-Infinity\" or \"NaN\" (JSON has no such numbers)\n",
                 comm.rank(),
                 static_cast<long long>(count),
                 name.c_str());
  }
}

// --all-ranks: {"ranks": [every rank's result]} on rank 0 (collective).
json every_rank(Communicator& comm, const json& result) {
  const std::vector<std::string> texts = gather_text(comm, result.dump());
  if (comm.rank() != 0) return result;
  json ranks = json::array();
  for (const std::string& t : texts) ranks.push_back(json::parse(t));
  return {{"ranks", ranks}};
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  const bool root = comm->rank() == 0;
  CLI::App app{
      "Runs a JSON-described adgraph graph (format: driver/loader.h in the "
      "sources)"};
  std::string file, output;
  bool all_ranks = false, check = false, ops = false;
  app.add_option("graph", file, "the JSON graph document");
  app.add_option(
      "--output", output, "write the result here instead of standard output");
  app.add_flag("--all-ranks",
               all_ranks,
               "report every rank's values: {\"ranks\": [...]}");
  app.add_flag("--check",
               check,
               "validate the document and print a summary, without running");
  app.add_flag("--list-ops",
               ops,
               "print every registered op with its inputs and attributes");
  try {
    app.parse(argc, argv);
    if (!ops && file.empty()) throw CLI::RequiredError("graph");
  } catch (const CLI::ParseError& e) {
    return root ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
  }
  if (ops) {
    if (root) std::printf("%s\n", list_ops().dump(2).c_str());
    return 0;
  }
  // Every rank must run the same command, or they would wait for each
  // other in different places (only one given --check, say).
  const std::string command = file + '\n' + output + '\n' +
                              std::to_string(check) + std::to_string(all_ranks);
  json result;
  std::string text;
  try {
    check_command(*comm, command, output);
    NonFinite non_finite;
    result = run(file, *comm, check, non_finite);
    if (root || all_ranks) report_non_finite(*comm, non_finite);
    if (all_ranks) result = every_rank(*comm, result);
    text = result.dump() + "\n";
    if (root && !output.empty()) write_output_file(output, text, "--output");
  } catch (const Error& e) {
    const std::string message = e.file().empty() &&
                                        !dynamic_cast<const JsonError*>(&e) &&
                                        !dynamic_cast<const OptionsError*>(&e)
                                    ? file + ": " + e.what()
                                    : std::string(e.what());
    return report_failure("adgraph-run", message, 2);
  } catch (const std::bad_alloc&) {
    return report_failure(
        "adgraph-run",
        file +
            ": out of memory: a tensor could not be allocated "
            "(see ADGRAPH_MEMORY_LIMIT and the 2^30-element "
            "limit in README.md)",
        3);
  } catch (const std::exception& e) {
    return report_failure(
        "adgraph-run", file + ": internal error: " + std::string(e.what()), 4);
  }
  if (root && output.empty()) std::fputs(text.c_str(), stdout);
  return 0;
}

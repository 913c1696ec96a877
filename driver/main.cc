// adgraph-run: runs a JSON-described graph under mpirun.
//   mpirun -n 4 adgraph-run graph.json [--output FILE] [--all-ranks] [--check]
//   adgraph-run --list-ops
// The document format is described in driver/loader.h.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "adgraph.h"
#include "driver/loader.h"

using namespace adgraph;
using nlohmann::json;

namespace {

json list_ops() {
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

json run(const std::string& file, Communicator& comm, bool check_only) {
  std::ifstream in(file);
  if (!in) throw JsonError("cannot read the file", {}, {}, {}, file);
  std::stringstream text;
  text << in.rdbuf();
  const json doc = driver::parse_document(text.str(), file);
  Graph g;
  driver::Document d = driver::load_document(doc, file, g);
  if (check_only) {
    std::map<std::string, int> ops;
    for (int id = 0; id < g.num_nodes(); ++id) ++ops[g.node(id).op_name()];
    return {{"file", file},
            {"valid", true},
            {"nodes", g.num_nodes()},
            {"ops", ops},
            {"fetch", d.fetch},
            {"ranks", comm.size()},
            {"optimize", d.has_optimize}};
  }
  json result = json::object();
  FeedMap feeds = d.feeds;
  if (d.has_optimize) {
    const driver::Optimize& o = d.optimize;
    std::vector<Tensor> values = o.start;
    optim::LbfgsSummary s = optim::minimize(
        o.objective, o.variables, values, feeds, o.options, o.layout);
    json minimizer = json::object();
    for (std::size_t k = 0; k < o.variables.size(); ++k) {
      minimizer[o.names[k]] = tensor_to_json(values[k]);
      feeds[o.variables[k]] = values[k];
    }
    result["minimizer"] = minimizer;
    result["minimum"] = s.final_f;
    result["iterations"] = s.iterations;
    result["evaluations"] = s.evaluations;
    result["termination"] = optim::termination_name(s.termination);
  }
  if (!d.fetch.empty()) {
    std::vector<Value> fetches;
    for (const std::string& name : d.fetch)
      fetches.push_back(d.values.at(name));
    Session session(g);
    std::vector<Tensor> out = session.run(fetches, feeds);
    for (std::size_t k = 0; k < out.size(); ++k)
      result[d.fetch[k]] = tensor_to_json(out[k]);
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
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
  json result;
  try {
    result = run(file, *comm, check);
  } catch (const Error& e) {
    // Every rank loads the same document and fails the same way.
    if (root) {
      const std::string message =
          e.file().empty() && !dynamic_cast<const JsonError*>(&e)
              ? file + ": " + e.what()
              : std::string(e.what());
      std::fprintf(stderr, "adgraph-run: %s\n", message.c_str());
    }
    return 2;
  }
  if (all_ranks) {
    const std::vector<std::string> texts = gather_text(*comm, result.dump());
    if (root) {
      json ranks = json::array();
      for (const std::string& t : texts) ranks.push_back(json::parse(t));
      result = {{"ranks", ranks}};
    }
  }
  if (!root) return 0;
  const std::string text = result.dump() + "\n";
  if (output.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    std::ofstream out(output);
    out << text;
    if (!out) {
      std::fprintf(stderr, "adgraph-run: cannot write %s\n", output.c_str());
      comm->abort("cannot write " + output, 2);
    }
  }
  return 0;
}

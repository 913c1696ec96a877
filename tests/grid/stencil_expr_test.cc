// The stencil language: text form, simplification, and every operation's
// derivative rule against central differences of its value.
#include "grid/stencil_expr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "core/error.h"
#include "grid/stencil_impl.h"

namespace adgraph::grid {
namespace {

constexpr double kDerivativeTolerance = 1e-7;

TEST(StencilExpr, TextFormRoundTrips) {
  for (const std::string text : {"add(mul(2,in0),neg(in1[0,1]))",
                                 "where(lt(in0[-1,0],in1),exp(in0),0.5)",
                                 "inside[1,-2]",
                                 "pow(in2[0,0,3],1.5)",
                                 "div(sin(in0),sqrt(abs(in1)))",
                                 "0.10000000000000001"}) {
    EXPECT_EQ(print(parse(text)), text);
  }
  // Spaces are allowed; a zero offset prints without brackets.
  EXPECT_EQ(print(parse(" add( in0[0,0] , 1 ) ")), "add(in0,1)");
}

// parse's message for `text`, or "accepted".
std::string message(const std::string& text) {
  try {
    parse(text);
  } catch (const OptionsError& e) {
    return std::string(e.what());
  }
  return std::string("accepted");
}

TEST(StencilExpr, ParseErrorsNameThePosition) {
  EXPECT_EQ(message("add(in0,"),
            "stencil expression: expected an expression at character 8 of "
            "\"add(in0,\"");
  EXPECT_EQ(message("frob(in0)"),
            "stencil expression: unknown operation \"frob\" at character 0 of "
            "\"frob(in0)\"");
  EXPECT_EQ(message("sin(in0,in1)"),
            "stencil expression: sin takes 1 arguments at character 12 of "
            "\"sin(in0,in1)\"");
  EXPECT_EQ(message("in0[1,x]"),
            "stencil expression: expected an integer offset at character 6 of "
            "\"in0[1,x]\"");
  EXPECT_EQ(
      message("in0 in1"),
      "stencil expression: unexpected text at character 4 of \"in0 in1\"");
  // A constant a double cannot hold would be written into the kernel as
  // inf; it is refused where it stands.
  EXPECT_EQ(message("add(in0, 1e400)"),
            "stencil expression: the number 1e400 is not a finite double at "
            "character 9 of \"add(in0, 1e400)\"");
}

// One expression per output, separated by ';': a message gives the
// position in the whole text and quotes it (the second expression of
// "in0;" is empty, at character 4).
TEST(StencilExpr, OutputsParseErrorsNameThePositionInTheWholeText) {
  auto outputs_message = [](const std::string& text) {
    try {
      detail::parse_outputs(text);
    } catch (const OptionsError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(outputs_message("in0;"),
            "stencil expression: expected an expression at character 4 of "
            "\"in0;\"");
  EXPECT_EQ(outputs_message("in0;mul(in0,in1;in1"),
            "stencil expression: expected ')' at character 15 of "
            "\"in0;mul(in0,in1;in1\"");
  EXPECT_EQ(detail::parse_outputs("in0; mul(in0,2)").size(), 2u);
}

TEST(StencilExpr, SimplificationIsExact) {
  ExprPtr x = read(0, {0, 1});
  EXPECT_EQ(print(apply("add", {constant(0), x})), "in0[0,1]");
  EXPECT_EQ(print(apply("mul", {constant(1), x})), "in0[0,1]");
  EXPECT_EQ(print(apply("mul", {x, constant(0)})), "0");
  EXPECT_EQ(print(apply("neg", {apply("neg", {x})})), "in0[0,1]");
  EXPECT_EQ(print(apply("add", {constant(2), constant(3)})), "5");
  EXPECT_EQ(print(apply("where", {constant(0), x, constant(7)})), "7");
  EXPECT_THROW(apply("sin", {x, x}), OptionsError);
  EXPECT_THROW(apply("frob", {x}), OptionsError);
}

TEST(StencilExpr, ShiftMovesReadsAndInsidesButNotFixedInputs) {
  ExprPtr e = parse("mul(in0[1,0],add(in1,inside[0,-1]))");
  EXPECT_EQ(print(shifted(e, {-1, 2}, 2)),
            "mul(in0[0,2],add(in1[-1,2],inside[-1,1]))");
  std::vector<bool> fixed = {false, true};
  EXPECT_EQ(print(shifted(e, {-1, 2}, 2, &fixed)),
            "mul(in0[0,2],add(in1,inside[-1,1]))");
}

// A recurrence 200 levels deep shares each level twice: as a tree it has
// 2^200 leaves, as a DAG 3 nodes a level. The walks that find reads and
// the rebuilds that shift and renumber go through the DAG, so they finish;
// a rebuilt expression keeps the sharing (its two arguments stay one node).
TEST(StencilExpr, WalksAndRebuildsGoThroughTheDagOnce) {
  ExprPtr x = apply("add", {read(0, {1}), inside({-1})});
  for (int level = 0; level < 200; ++level)
    x = apply("mul", {x, apply("sub", {constant(1), x})});
  std::vector<ReadKey> reads = reads_of(x, 1);
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].input, 0);
  EXPECT_EQ(reads[0].offset, Offset{1});
  EXPECT_EQ(insides_of(x, 1), (std::vector<Offset>{Offset{-1}}));
  ExprPtr moved = renumbered(shifted(x, {2}, 1), {3});
  reads = reads_of(moved, 1);
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].input, 3);
  EXPECT_EQ(reads[0].offset, Offset{3});
  EXPECT_EQ(insides_of(moved, 1), (std::vector<Offset>{Offset{1}}));
  ASSERT_EQ(moved->op, "mul");
  EXPECT_EQ(moved->args[0], moved->args[1]->args[1]);
}

// A node used twice is printed once with a label ($k=…) and by the label
// after; parsing gives the same sharing back, so a recurrence 200 levels
// deep (2^200 leaves as a tree) prints and parses in linear size.
TEST(StencilExpr, SharedSubexpressionsPrintOnceWithLabels) {
  ExprPtr p = apply("mul", {read(0), read(1)});
  ExprPtr q = apply("add", {p, apply("sin", {p})});
  EXPECT_EQ(print(q), "add($0=mul(in0,in1),sin($0))");
  EXPECT_EQ(print(apply("sub", {q, q})),
            "sub($0=add($1=mul(in0,in1),sin($1)),$0)");
  ExprPtr back = parse("sub($0=add($1=mul(in0,in1),sin($1)),$0)");
  EXPECT_EQ(back->args[0], back->args[1]);
  EXPECT_EQ(back->args[0]->args[0], back->args[0]->args[1]->args[0]);

  // A rebuild that changes nothing keeps the node, so a part stays shared
  // between expressions renumbered one by one (an operation's arguments).
  EXPECT_EQ(renumbered(p, {0, 1}), p);
  EXPECT_EQ(print(apply("add", {renumbered(p, {0, 1}), renumbered(p, {0, 1})})),
            "add($0=mul(in0,in1),$0)");
  EXPECT_EQ(print(renumbered(p, {1, 0})), "mul(in1,in0)");

  ExprPtr x = apply("add", {read(0, {1}), inside({-1})});
  for (int level = 0; level < 200; ++level)
    x = apply("mul", {x, apply("sub", {constant(1), x})});
  const std::string text = print(x);
  // Level by level: "$k=mul(", ",sub(1,$k))" — under 40 characters each.
  EXPECT_LT(text.size(), 200u * 40u);
  EXPECT_EQ(text.substr(0, 12), "mul($0=mul($");
  ExprPtr y = parse(text);
  EXPECT_EQ(print(y), text);
  EXPECT_EQ(y->args[0], y->args[1]->args[1]);

  EXPECT_EQ(message("add($0,in0)"),
            "stencil expression: label $0 used before it is defined at "
            "character 6 of \"add($0,in0)\"");
  EXPECT_EQ(message("add($1=in0,in0)"),
            "stencil expression: label $1 defined where $0 comes next at "
            "character 7 of \"add($1=in0,in0)\"");
  EXPECT_EQ(message("$0=add($0,in0)"),
            "stencil expression: label $0 used before it is defined at "
            "character 9 of \"$0=add($0,in0)\"");
  EXPECT_EQ(message("add($,in0)"),
            "stencil expression: expected a label number after '$' at "
            "character 5 of \"add($,in0)\"");
}

// Every operation's derivative with respect to each of its two reads
// against central differences of its value, at points away from kinks.
TEST(StencilExpr, EveryDerivativeRuleAgreesWithCentralDifferences) {
  const std::map<std::string, std::string> cases = {
      {"add", "add(in0,in1)"},
      {"sub", "sub(in0,in1)"},
      {"mul", "mul(in0,in1)"},
      {"div", "div(in0,in1)"},
      {"pow", "pow(in0,in1)"},
      {"min", "min(in0,in1)"},
      {"max", "max(in0,in1)"},
      {"neg", "neg(in0)"},
      {"exp", "exp(in0)"},
      {"log", "log(in0)"},
      {"sin", "sin(in0)"},
      {"cos", "cos(in0)"},
      {"tanh", "tanh(in0)"},
      {"abs", "abs(sub(in0,in1))"},
      {"sqrt", "sqrt(in0)"},
      {"where", "where(gt(in0,in1),mul(in0,in0),sub(in1,in0))"},
      {"compare", "add(lt(in0,in1),ge(in0,in1))"}};
  for (const ExprOp& op : expr_ops()) {
    const bool comparison = op.name == "lt" || op.name == "le" ||
                            op.name == "gt" || op.name == "ge" ||
                            op.name == "eq" || op.name == "ne";
    const std::string text =
        comparison ? cases.at("compare") : cases.at(op.name);
    const ExprPtr e = parse(text);
    for (double a : {0.7, 1.9}) {
      for (double b : {1.3, 0.4}) {
        auto value = [&](double x, double y) {
          return evaluate(
              e,
              [&](const ReadKey& k) { return k.input == 0 ? x : y; },
              [](const Offset&) { return true; },
              1);
        };
        for (int wrt = 0; wrt < 2; ++wrt) {
          ExprPtr d = derivative(
              e,
              [&](const ReadKey& k) {
                return k.input == wrt ? constant(1) : nullptr;
              },
              1);
          const double got =
              d ? evaluate(
                      d,
                      [&](const ReadKey& k) { return k.input == 0 ? a : b; },
                      [](const Offset&) { return true; },
                      1)
                : 0.0;
          const double h = 1e-6;
          const double fd = wrt == 0
                                ? (value(a + h, b) - value(a - h, b)) / (2 * h)
                                : (value(a, b + h) - value(a, b - h)) / (2 * h);
          EXPECT_NEAR(got, fd, kDerivativeTolerance)
              << op.name << " d/d in" << wrt << " at " << a << ", " << b;
        }
      }
    }
  }
}

TEST(StencilExpr, MinAndMaxPickTheFirstArgumentOnTies) {
  auto at = [](const std::string& text, double x, double y) {
    return evaluate(
        parse(text),
        [&](const ReadKey& k) { return k.input == 0 ? x : y; },
        [](const Offset&) { return true; },
        1);
  };
  EXPECT_EQ(at("min(in0,in1)", 2, 3), 2);
  EXPECT_EQ(at("max(in0,in1)", 2, 3), 3);
  EXPECT_EQ(at("where(in0,in1,5)", 0, 3), 5);
  EXPECT_EQ(at("where(in0,in1,5)", -1, 3), 3);
  // The derivative of min at a tie goes to the first argument.
  ExprPtr d = derivative(
      parse("min(in0,in1)"),
      [](const ReadKey& k) { return k.input == 0 ? constant(1) : nullptr; },
      1);
  EXPECT_EQ(evaluate(
                d,
                [](const ReadKey&) { return 1.0; },
                [](const Offset&) { return true; },
                1),
            1.0);
}

}  // namespace
}  // namespace adgraph::grid

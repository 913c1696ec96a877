// adgraph's errors: the message names the file, the node and its op, and
// the field, each only when known, in that order; the parts stay apart for
// a caller that adds the file; invalid_option reports an option out of
// range as Ceres' is_valid does.
#include "core/error.h"

#include <gtest/gtest.h>

#include <string>

namespace adgraph {
namespace {

TEST(Error, ComposesFileNodeOpAndFieldSkippingEmptyParts) {
  EXPECT_EQ(Error::compose("bad", "", "", "", ""), "bad");
  EXPECT_EQ(Error::compose("bad", "n", "", "", ""), "node \"n\": bad");
  EXPECT_EQ(Error::compose("bad", "n", "pow", "", ""), "node \"n\" (pow): bad");
  EXPECT_EQ(Error::compose("bad", "", "pow", "", ""), "op \"pow\": bad");
  EXPECT_EQ(Error::compose("bad", "", "", "input \"r\"", ""),
            "input \"r\": bad");
  EXPECT_EQ(Error::compose("shape [3] does not broadcast with [2]",
                           "l",
                           "pow",
                           "input \"r\"",
                           "graph.json"),
            "graph.json: node \"l\" (pow): input \"r\": shape [3] does not "
            "broadcast with [2]");
}

TEST(Error, KeepsItsPartsAndIsCaughtAsItsKind) {
  try {
    throw ShapeError("does not fit", "x", "matmul", "input \"b\"");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "node \"x\" (matmul): input \"b\": does not fit");
    EXPECT_EQ(e.detail(), "does not fit");
    EXPECT_EQ(e.node(), "x");
    EXPECT_EQ(e.op(), "matmul");
    EXPECT_EQ(e.field(), "input \"b\"");
    EXPECT_EQ(e.file(), "");
    EXPECT_NE(dynamic_cast<const ShapeError*>(&e), nullptr);
    EXPECT_EQ(dynamic_cast<const GraphError*>(&e), nullptr);
  }
}

TEST(Error, InvalidOptionWritesWhyAndWhich) {
  std::string error, field;
  EXPECT_FALSE(invalid_option(&error, &field, "trips", "must be >= 1"));
  EXPECT_EQ(error, "must be >= 1");
  EXPECT_EQ(field, "trips");
  std::string only_error;
  EXPECT_FALSE(invalid_option(&only_error, nullptr, "dt", "must be > 0"));
  EXPECT_EQ(only_error, "must be > 0");
}

}  // namespace
}  // namespace adgraph

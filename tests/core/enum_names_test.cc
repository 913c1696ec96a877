// enum_names.h: names, parsing and the list of choices from one table, on
// an enum of this test and on the library's tables.
#include "core/enum_names.h"

#include <gtest/gtest.h>

#include <array>
#include <optional>

#include "core/checkpoint_schedule.h"
#include "core/op.h"
#include "grid/exchange.h"
#include "optim/lbfgs.h"
#include "solvers/heat_solver.h"

namespace adgraph {
namespace {

enum class Fruit { kApple, kPear, kPlum, kUnnamed };

constexpr auto enum_names(Fruit) {
  return std::array{EnumName{Fruit::kApple, "apple"},
                    EnumName{Fruit::kPear, "pear"},
                    EnumName{Fruit::kPlum, "plum"}};
}

TEST(EnumNames, NamesParsesAndListsFromOneTable) {
  static_assert(name_of(Fruit::kPear) == "pear");
  static_assert(parse_enum<Fruit>("plum") == Fruit::kPlum);
  EXPECT_EQ(name_of(Fruit::kApple), "apple");
  EXPECT_EQ(name_of(Fruit::kUnnamed), "?");
  EXPECT_EQ(parse_enum<Fruit>("pear"), Fruit::kPear);
  EXPECT_EQ(parse_enum<Fruit>("Pear"), std::nullopt);
  EXPECT_EQ(parse_enum<Fruit>(""), std::nullopt);
  EXPECT_EQ(enum_choices<Fruit>(), "apple, pear or plum");
}

TEST(EnumNames, TheLibrarysNamesComeFromTheirTables) {
  EXPECT_STREQ(optim::termination_name(optim::Termination::kLineSearchFailed),
               "line_search_failed");
  EXPECT_EQ(enum_choices<optim::Termination>(),
            "gradient_norm, function_change, max_iterations, "
            "max_evaluations, line_search_failed or not_finite");
  EXPECT_STREQ(solvers::heat_scheme_name(solvers::HeatScheme::kCrankNicolson),
               "crank_nicolson");
  solvers::HeatScheme scheme = solvers::HeatScheme::kExplicit;
  EXPECT_TRUE(solvers::parse_heat_scheme("backward_euler", &scheme));
  EXPECT_EQ(scheme, solvers::HeatScheme::kBackwardEuler);
  EXPECT_FALSE(solvers::parse_heat_scheme("implicit", &scheme));
  EXPECT_EQ(scheme, solvers::HeatScheme::kBackwardEuler);
  EXPECT_STREQ(grid::detail::boundary_name(grid::detail::Boundary::kMirror),
               "mirror");
  EXPECT_EQ(enum_choices<CheckpointSchedule::Kind>(),
            "default, all, auto, every, binomial or budget");
  EXPECT_STREQ(attr_type_name(AttrType::kFloats), "float list");
  EXPECT_EQ(enum_choices<AttrType>(),
            "int, float, bool, string, int list, float list or tensor");
}

}  // namespace
}  // namespace adgraph

// The halo exchange of a grid field and its transpose (internal to grid/):
// what the halo op and the stencil kernels run.
//
// Forward. The padded array has `width[a]` ghost layers on both sides of
// spatial axis a. Axes are exchanged one after another (0, 1, …): on axis
// a each rank sends its first and last width[a] owned layers to its low
// and high neighbours and receives their layers into its ghosts. With
// `corners`, the layers sent on axis a span the ghosts already filled on
// the axes before it, so edge and corner ghosts (up to 26 neighbours in
// 3-D) arrive in ndim rounds of two messages; without, only faces are
// filled and edge/corner ghosts are zero. At a non-periodic edge the ghost
// layers follow `rule`, applied in the same axis order (numpy.pad's
// semantics: zero is mode "constant", mirror "reflect", copy "edge").
//
// Transpose. The ghosts' cotangents go back to the ranks (or edge layers)
// they came from, axis by axis in the reverse order, and are added there:
// the low neighbour's contribution first, then the high one's, then the
// ghost layers of a rule in the order k = 1 … width[a].
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/tensor.h"
#include "grid/grid.h"

namespace adgraph {
class Communicator;
}

namespace adgraph::grid::detail {

enum class Boundary { kZero, kMirror, kCopy };

constexpr auto enum_names(Boundary) {
  return std::array{EnumName{Boundary::kZero, "zero"},
                    EnumName{Boundary::kMirror, "mirror"},
                    EnumName{Boundary::kCopy, "copy"}};
}

// "zero", "mirror", "copy" (name_of, as a C string).
const char* boundary_name(Boundary b);
// Throws nothing; false for an unknown name.
bool parse_boundary(const std::string& name, Boundary* out);

struct HaloSpec {
  std::vector<int64_t> width;  // per spatial axis
  bool corners = true;
  Boundary rule = Boundary::kZero;
};

// The padded shape of a [batch…, spatial…] shape.
Shape padded_shape(const Shape& local, const HaloSpec& spec);

// Empty when `spec` can run on `layout`, else why not: every patch must
// have at least width[a] points on an exchanged axis (more than width[a]
// for mirror).
std::string halo_problem(const GridLayout& layout, const HaloSpec& spec);

// Writes x (shape [batch…, local…]) into the interior of `padded` (shape
// padded_shape) and fills its ghosts. Collective over the grid's ranks.
// With `ghosts_only`, only the ghosts are meant for the caller (a kernel
// that reads owned points from x itself): the interior gets just the owned
// layers the exchange reads (those sent to a neighbour, or copied by a
// mirror or copy rule), the rest is left as it was.
void exchange(Communicator& comm,
              const GridLayout& layout,
              const HaloSpec& spec,
              const Tensor& x,
              Tensor& padded,
              bool ghosts_only = false);

// exchange() in two halves, so that work that does not need the ghosts
// runs while the messages travel: start_exchange copies x into a padded
// array of its own and posts the first pass's messages (every pass's when
// spec.corners is false: faces only travel at once) and returns a ticket;
// finish_exchange completes the passes in order and hands over the padded
// array (`padded` of padded_shape). Same bits as exchange(). Every rank of
// the grid starts and finishes its exchanges in the same order.
int64_t start_exchange(Communicator& comm,
                       const GridLayout& layout,
                       const HaloSpec& spec,
                       const Tensor& x);
void finish_exchange(Communicator& comm, int64_t ticket, Tensor& padded);
// Whether `rank` exchanges messages along spatial axis a (a neighbour
// there other than itself).
bool messages_along(const GridLayout& layout, int rank, int a);

// exchange(..., ghosts_only = true) in two halves over the caller's
// `padded` (of padded_shape), which must stay alive and untouched until
// finish_exchange_into: the stencil kernel computes the points whose reads
// stay in the patch while the messages travel. Same bits as exchange().
// The ghosts of the axes without messages are filled at the start over
// the owned points of the others, so those points may read them at once
// (with corners, an axis without messages after one with messages is
// filled again, in order, as the exchange finishes). `layout` and `spec`
// too must stay alive until then.
int64_t start_exchange_into(Communicator& comm,
                            const GridLayout& layout,
                            const HaloSpec& spec,
                            const Tensor& x,
                            Tensor& padded);
void finish_exchange_into(Communicator& comm, int64_t ticket);
// exchange_transpose() in two halves, as above (padded_bar is copied).
int64_t start_exchange_transpose(Communicator& comm,
                                 const GridLayout& layout,
                                 const HaloSpec& spec,
                                 const Tensor& padded_bar);
void finish_exchange_transpose(Communicator& comm,
                               int64_t ticket,
                               Tensor& x_bar);
// The transpose: from the cotangent of the padded array (consumed: its
// values are changed) to the cotangent of x. Collective.
void exchange_transpose(Communicator& comm,
                        const GridLayout& layout,
                        const HaloSpec& spec,
                        Tensor& padded_bar,
                        Tensor& x_bar);

}  // namespace adgraph::grid::detail

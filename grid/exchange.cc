#include "grid/exchange.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "grid/box.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/tags.h"

namespace adgraph::grid::detail {

const char* boundary_name(Boundary b) { return name_of(b).data(); }

bool parse_boundary(const std::string& name, Boundary* out) {
  const std::optional<Boundary> b = parse_enum<Boundary>(name);
  if (b) *out = *b;
  return b.has_value();
}

Shape padded_shape(const Shape& local, const HaloSpec& spec) {
  Shape p = local;
  const int nb = static_cast<int>(local.size() - spec.width.size());
  for (std::size_t a = 0; a < spec.width.size(); ++a)
    p[nb + a] += 2 * spec.width[a];
  return p;
}

std::string halo_problem(const GridLayout& layout, const HaloSpec& spec) {
  const Shape smallest = layout.min_extent();
  for (int a = 0; a < layout.ndim(); ++a) {
    const int64_t w = spec.width[a];
    if (w == 0) continue;
    const bool needs_neighbours = layout.procs[a] > 1 || layout.periodic[a];
    if (needs_neighbours && smallest[a] < w) {
      return "a halo of width " + std::to_string(w) + " on axis " +
             std::to_string(a) + " needs patches of at least " +
             std::to_string(w) + " points there; the smallest has " +
             std::to_string(smallest[a]);
    }
    if (spec.rule == Boundary::kMirror && !layout.periodic[a] &&
        smallest[a] <= w) {
      return "a mirror halo of width " + std::to_string(w) + " on axis " +
             std::to_string(a) + " needs patches of more than " +
             std::to_string(w) + " points there; the smallest has " +
             std::to_string(smallest[a]);
    }
  }
  return {};
}

namespace {

// One axis's pass over a padded array: its geometry and neighbours.
struct Pass {
  Shape shape;   // the padded array's
  int axis = 0;  // array axis of the spatial axis
  int64_t w = 0, n = 0;
  int low = -1, high = -1, self = 0;
  Box region;  // the slab's extents on the other axes

  // Layers [begin, begin + count) of the axis, over the region.
  Box layers(int64_t begin, int64_t count) const {
    Box b = region;
    b.origin[axis] = begin;
    b.extent[axis] = count;
    return b;
  }
  Box low_ghost() const { return layers(0, w); }
  Box high_ghost() const { return layers(w + n, w); }
  Box low_owned() const { return layers(w, w); }
  Box high_owned() const { return layers(n, w); }
};

Pass pass_of(const GridLayout& layout,
             const HaloSpec& spec,
             int rank,
             const Shape& padded,
             int a) {
  const int nd = layout.ndim();
  const int nb = static_cast<int>(padded.size()) - nd;
  Pass p;
  p.shape = padded;
  p.axis = nb + a;
  p.w = spec.width[a];
  p.n = padded[nb + a] - 2 * p.w;
  std::vector<int> dir(nd, 0);
  dir[a] = -1;
  p.low = layout.neighbour(rank, dir);
  dir[a] = 1;
  p.high = layout.neighbour(rank, dir);
  p.self = rank;
  p.region = whole(padded);
  for (int b = 0; b < nd; ++b) {
    if (b == a || (b < a && spec.corners)) continue;
    p.region.origin[nb + b] = spec.width[b];
    p.region.extent[nb + b] = padded[nb + b] - 2 * spec.width[b];
  }
  return p;
}

std::vector<double> pack(const Tensor& t, const Box& box) {
  std::vector<double> buf(static_cast<std::size_t>(box.size()));
  copy_box(t.data(), t.shape(), box, buf.data(), box.extent, whole(box.extent));
  return buf;
}

// `box` of t in a buffer of the communicator's spares (a message's).
Tensor pack_spare(Communicator& comm, const Tensor& t, const Box& box) {
  Tensor buf = Tensor::adopt(Shape{box.size()}, comm.take_spare(box.size()));
  copy_box(t.data(), t.shape(), box, buf.data(), box.extent, whole(box.extent));
  return buf;
}

void unpack(const double* buf, Tensor& t, const Box& box, bool add) {
  copy_box(buf, box.extent, whole(box.extent), t.data(), t.shape(), box, add);
}

// Layer `from` of the axis onto layer `to` (over the region).
void copy_layer(const Pass& p, Tensor& t, int64_t from, int64_t to, bool add) {
  copy_box(t.data(),
           t.shape(),
           p.layers(from, 1),
           t.data(),
           t.shape(),
           p.layers(to, 1),
           add);
}

// Messages to and from the two neighbours of a pass (not to itself), in
// flight between post_swap and wait_swap: what arrives lands in got[side].
// Every buffer is one of the communicator's spares, and given back once
// landed (release): an exchange at every step allocates nothing.
struct Swap {
  int receives = 0, sends = 0;
  std::array<int64_t, 4> handles{};  // the receives, then the sends
  std::array<int64_t, 2> counts{};   // per receive
  std::array<int, 2> side{};         // per receive: 0 low, 1 high
  std::array<Tensor, 2> got;

  void release(Communicator& comm) {
    for (int k = 0; k < receives; ++k)
      comm.keep_spare(std::move(got[side[k]]).take_storage());
    receives = sends = 0;
  }
};

// Posts the sends of `out_low` to the low neighbour and `out_high` to the
// high one (copies: t may change meanwhile), and the receives of what they
// send back; a neighbour equal to this rank or missing takes no message.
// tag_base + 0 travels towards the low neighbour.
void post_swap(Communicator& comm,
               const Pass& p,
               const Tensor& t,
               const Box& out_low,
               const Box& out_high,
               int tag_base,
               Swap& s) {
  std::array<int64_t, 2> sends{};
  for (int side = 0; side < 2; ++side) {
    const int peer = side == 0 ? p.low : p.high;
    if (peer < 0 || peer == p.self) continue;
    const Box& out = side == 0 ? out_low : out_high;
    // What the low neighbour sends travels upwards (tag_base + 1).
    s.handles[s.receives] =
        comm.irecv(out.size(), peer, tag_base + (side == 0 ? 1 : 0));
    s.counts[s.receives] = out.size();
    s.side[s.receives] = side;
    ++s.receives;
    Tensor buf = pack_spare(comm, t, out);
    sends[s.sends++] = comm.isend_buffer(buf, peer, tag_base + side);
    comm.keep_spare(std::move(buf).take_storage());
  }
  for (int k = 0; k < s.sends; ++k) s.handles[s.receives + k] = sends[k];
}

// The receives land in spares of their own (adopted: no copy).
void wait_swap(Communicator& comm, Swap& s) {
  const int n = s.receives + s.sends;
  if (n == 0) return;
  std::array<Tensor*, 4> targets{};
  std::array<int64_t, 4> counts{};
  std::array<bool, 4> adopt{};
  for (int k = 0; k < s.receives; ++k) {
    Tensor& got = s.got[s.side[k]];
    got = Tensor::adopt(Shape{s.counts[k]}, comm.take_spare(s.counts[k]));
    targets[k] = &got;
    counts[k] = s.counts[k];
    adopt[k] = true;
  }
  comm.wait(s.handles.data(), targets.data(), counts.data(), adopt.data(), n);
}

void fill_rule_low(const Pass& p, Boundary rule, Tensor& t) {
  for (int64_t k = 1; k <= p.w; ++k) {
    if (rule == Boundary::kZero)
      fill_box(t.data(), t.shape(), p.layers(p.w - k, 1), 0.0);
    if (rule == Boundary::kCopy) copy_layer(p, t, p.w, p.w - k, false);
    if (rule == Boundary::kMirror) copy_layer(p, t, p.w + k, p.w - k, false);
  }
}

void fill_rule_high(const Pass& p, Boundary rule, Tensor& t) {
  const int64_t last = p.w + p.n - 1;
  for (int64_t k = 1; k <= p.w; ++k) {
    if (rule == Boundary::kZero)
      fill_box(t.data(), t.shape(), p.layers(last + k, 1), 0.0);
    if (rule == Boundary::kCopy) copy_layer(p, t, last, last + k, false);
    if (rule == Boundary::kMirror) copy_layer(p, t, last - k, last + k, false);
  }
}

void add_rule_low(const Pass& p, Boundary rule, Tensor& t) {
  for (int64_t k = 1; k <= p.w; ++k) {
    if (rule == Boundary::kCopy) copy_layer(p, t, p.w - k, p.w, true);
    if (rule == Boundary::kMirror) copy_layer(p, t, p.w - k, p.w + k, true);
  }
}

void add_rule_high(const Pass& p, Boundary rule, Tensor& t) {
  const int64_t last = p.w + p.n - 1;
  for (int64_t k = 1; k <= p.w; ++k) {
    if (rule == Boundary::kCopy) copy_layer(p, t, last + k, last, true);
    if (rule == Boundary::kMirror) copy_layer(p, t, last + k, last - k, true);
  }
}

// Zeros the edge and corner ghosts a face-only halo leaves unset: the
// points in the ghost layers of two axes or more. (Each face, the ghost
// layers of one axis over the others' interior, is written whole by its
// pass: a neighbour's layers, the periodic wrap or the edge rule.) As
// disjoint boxes: a ghost side of axis a and of a later axis c, the axes
// between them and before a over their interior, those after c whole.
void zero_ghosts(const HaloSpec& spec, Tensor& t) {
  const int nd = static_cast<int>(spec.width.size());
  const int nb = t.rank() - nd;
  for (int a = 0; a < nd; ++a) {
    for (int c = a + 1; c < nd; ++c) {
      if (spec.width[a] == 0 || spec.width[c] == 0) continue;
      Box b = whole(t.shape());
      for (int k = 0; k < c; ++k) {
        b.origin[nb + k] = spec.width[k];
        b.extent[nb + k] = t.shape()[nb + k] - 2 * spec.width[k];
      }
      for (int low_a : {1, 0}) {
        for (int low_c : {1, 0}) {
          for (const auto& [axis, low] : {std::pair{a, low_a}, {c, low_c}}) {
            b.extent[nb + axis] = spec.width[axis];
            b.origin[nb + axis] =
                low ? 0 : t.shape()[nb + axis] - spec.width[axis];
          }
          fill_box(t.data(), t.shape(), b, 0.0);
        }
      }
    }
  }
}

Box interior(const Shape& padded, const HaloSpec& spec) {
  Box b = whole(padded);
  const int nb = static_cast<int>(padded.size() - spec.width.size());
  for (std::size_t a = 0; a < spec.width.size(); ++a) {
    b.origin[nb + a] = spec.width[a];
    b.extent[nb + a] = padded[nb + a] - 2 * spec.width[a];
  }
  return b;
}

// The owned layers the exchange itself reads at each face of axis a: the
// width sent to a neighbour (this rank too, periodic on one process), else
// what the edge rule copies (mirror w + 1, copy 1, zero none).
int64_t layers_read(
    const GridLayout& layout, const HaloSpec& spec, int rank, int a, int side) {
  std::vector<int> dir(layout.ndim(), 0);
  dir[a] = side;
  const int64_t w = spec.width[a];
  if (w == 0) return 0;
  if (layout.neighbour(rank, dir) >= 0) return w;
  switch (spec.rule) {
    case Boundary::kMirror:
      return w + 1;
    case Boundary::kCopy:
      return 1;
    case Boundary::kZero:
      break;
  }
  return 0;
}

// x onto the interior of `padded`; with `ghosts_only`, only the layers the
// exchange reads (layers_read).
void copy_interior(const GridLayout& layout,
                   const HaloSpec& spec,
                   int rank,
                   const Tensor& x,
                   Tensor& padded,
                   bool ghosts_only) {
  const Box inside = interior(padded.shape(), spec);
  if (!ghosts_only) {
    copy_box(x.data(),
             x.shape(),
             whole(x.shape()),
             padded.data(),
             padded.shape(),
             inside);
    return;
  }
  const int nd = static_cast<int>(spec.width.size());
  const int nb = x.rank() - nd;
  for (int a = 0; a < nd; ++a) {
    const int64_t n = x.shape()[nb + a];
    int64_t low = std::min(layers_read(layout, spec, rank, a, -1), n);
    const int64_t high = std::min(layers_read(layout, spec, rank, a, 1), n);
    if (low + high >= n) low = n;  // one copy of the whole axis
    for (const auto& [begin, count] :
         {std::pair{int64_t{0}, low}, std::pair{n - high, high}}) {
      if (count == 0 || (begin > 0 && low == n)) continue;
      Box from = whole(x.shape()), to = inside;
      from.origin[nb + a] = begin;
      from.extent[nb + a] = count;
      to.origin[nb + a] += begin;
      to.extent[nb + a] = count;
      copy_box(x.data(), x.shape(), from, padded.data(), padded.shape(), to);
    }
  }
}

// One pass of the forward exchange, its messages in: the ghosts of axis
// p.axis from the neighbours, this rank itself (periodic, one process) or
// the boundary rule.
void land_forward(const Pass& p, Boundary rule, Swap& s, Tensor& padded) {
  for (int k = 0; k < s.receives; ++k) {
    unpack(s.got[s.side[k]].data(),
           padded,
           s.side[k] == 0 ? p.low_ghost() : p.high_ghost(),
           false);
  }
  // A periodic axis of one process wraps onto itself.
  if (p.low == p.self)
    copy_box(padded.data(),
             padded.shape(),
             p.high_owned(),
             padded.data(),
             padded.shape(),
             p.low_ghost());
  if (p.high == p.self)
    copy_box(padded.data(),
             padded.shape(),
             p.low_owned(),
             padded.data(),
             padded.shape(),
             p.high_ghost());
  if (p.low < 0) fill_rule_low(p, rule, padded);
  if (p.high < 0) fill_rule_high(p, rule, padded);
}

// One pass of the transpose, its messages in: the low side first (the low
// neighbour's high ghosts, this rank's own when it is its own neighbour, or
// the rule's layers), then the high one.
void land_transpose(const Pass& p, Boundary rule, Swap& s, Tensor& t) {
  std::vector<double> from_self_low, from_self_high;
  if (p.low == p.self) from_self_low = pack(t, p.high_ghost());
  if (p.high == p.self) from_self_high = pack(t, p.low_ghost());
  if (p.low < 0) add_rule_low(p, rule, t);
  if (p.low == p.self) unpack(from_self_low.data(), t, p.low_owned(), true);
  if (p.low >= 0 && p.low != p.self)
    unpack(s.got[0].data(), t, p.low_owned(), true);
  if (p.high < 0) add_rule_high(p, rule, t);
  if (p.high == p.self) unpack(from_self_high.data(), t, p.high_owned(), true);
  if (p.high >= 0 && p.high != p.self)
    unpack(s.got[1].data(), t, p.high_owned(), true);
}

// An exchange (or its transpose) over a padded array t, pass by pass:
// axes 0, 1, … forward, the reverse order for the transpose. With corners
// a pass sends what the passes before it filled, so it cannot start before
// they land; without, the passes touch disjoint layers and all post at
// once. Either way they land in the same order, so the bits are the same
// however the messages are started.
struct Flight {
  GridLayout own_layout;  // copies, for an exchange split over two nodes
  HaloSpec own_spec;
  const GridLayout& layout;  // own_layout, or the caller's
  const HaloSpec& spec;
  bool transpose = false;
  Tensor own;
  Tensor& t;              // own, or the caller's array (start_exchange_into)
  std::vector<int> axes;  // in landing order, width 0 left out
  std::vector<std::unique_ptr<Swap>> posted;  // per entry of axes, or null

  Flight(const GridLayout& l, const HaloSpec& s, bool back, Tensor padded)
      : own_layout(l),
        own_spec(s),
        layout(own_layout),
        spec(own_spec),
        transpose(back),
        own(std::move(padded)),
        t(own) {
    list_axes({});
  }
  // Over the caller's array, layout and spec (alive until it lands), the
  // passes of the axes in `landed` left out (start_exchange_into filled
  // them itself).
  Flight(const GridLayout& l,
         const HaloSpec& s,
         Tensor& into,
         const std::vector<bool>& landed)
      : layout(l), spec(s), t(into) {
    list_axes(landed);
  }

  void list_axes(const std::vector<bool>& landed) {
    const int nd = layout.ndim();
    for (int k = 0; k < nd; ++k) {
      const int a = transpose ? nd - 1 - k : k;
      if (spec.width[a] > 0 && (landed.empty() || !landed[a]))
        axes.push_back(a);
    }
    posted.resize(axes.size());
  }

  Pass pass(Communicator& comm, int a) const {
    return pass_of(layout, spec, comm.rank(), t.shape(), a);
  }

  void post(Communicator& comm, std::size_t k) {
    const int a = axes[k];
    const Pass p = pass(comm, a);
    posted[k] = std::make_unique<Swap>();
    if (transpose) {
      post_swap(comm,
                p,
                t,
                p.low_ghost(),
                p.high_ghost(),
                kGridHaloTag + 6 + 2 * a,
                *posted[k]);
    } else {
      post_swap(comm,
                p,
                t,
                p.low_owned(),
                p.high_owned(),
                kGridHaloTag + 2 * a,
                *posted[k]);
    }
  }

  // The first pass's messages, or every pass's without corners.
  void start(Communicator& comm) {
    for (std::size_t k = 0; k < axes.size(); ++k) {
      if (k > 0 && spec.corners) break;
      post(comm, k);
    }
  }

  void finish(Communicator& comm) {
    for (std::size_t k = 0; k < axes.size(); ++k) {
      if (!posted[k]) post(comm, k);
      wait_swap(comm, *posted[k]);
      const Pass p = pass(comm, axes[k]);
      if (transpose) {
        land_transpose(p, spec.rule, *posted[k], t);
      } else {
        land_forward(p, spec.rule, *posted[k], t);
      }
      posted[k]->release(comm);
      posted[k].reset();
    }
  }
};

// Exchanges started and not yet finished, by ticket.
std::mutex flights_mutex;
std::map<int64_t, std::unique_ptr<Flight>> flights;

int64_t launch(Communicator& comm, std::unique_ptr<Flight> f) {
  static std::atomic<int64_t> next_ticket{1};
  f->start(comm);
  const int64_t ticket = next_ticket++;
  std::lock_guard<std::mutex> lock(flights_mutex);
  flights[ticket] = std::move(f);
  return ticket;
}

std::unique_ptr<Flight> land(Communicator& comm, int64_t ticket) {
  std::unique_ptr<Flight> f;
  {
    std::lock_guard<std::mutex> lock(flights_mutex);
    auto it = flights.find(ticket);
    ADGRAPH_CHECK(it != flights.end())
        << "no grid halo exchange in flight under ticket " << ticket;
    f = std::move(it->second);
    flights.erase(it);
  }
  f->finish(comm);
  return f;
}

// The cotangent of x: the interior of the padded cotangent.
void interior_of(const HaloSpec& spec, const Tensor& t, Tensor& x_bar) {
  copy_box(t.data(),
           t.shape(),
           interior(t.shape(), spec),
           x_bar.data(),
           x_bar.shape(),
           whole(x_bar.shape()));
}

}  // namespace

void exchange(Communicator& comm,
              const GridLayout& layout,
              const HaloSpec& spec,
              const Tensor& x,
              Tensor& padded,
              bool ghosts_only) {
  copy_interior(layout, spec, comm.rank(), x, padded, ghosts_only);
  if (!spec.corners) zero_ghosts(spec, padded);
  // A Flight's passes one after another, without its copies of the layout
  // and the spec (a stencil exchanges at every step): the same messages
  // landing in the same order, so the same bits.
  for (int a = 0; a < layout.ndim(); ++a) {
    if (spec.width[a] == 0) continue;
    const Pass p = pass_of(layout, spec, comm.rank(), padded.shape(), a);
    Swap swap;
    post_swap(comm,
              p,
              padded,
              p.low_owned(),
              p.high_owned(),
              kGridHaloTag + 2 * a,
              swap);
    wait_swap(comm, swap);
    land_forward(p, spec.rule, swap, padded);
    swap.release(comm);
  }
}

void exchange_transpose(Communicator& comm,
                        const GridLayout& layout,
                        const HaloSpec& spec,
                        Tensor& padded_bar,
                        Tensor& x_bar) {
  Flight f(layout, spec, true, std::move(padded_bar));
  f.start(comm);
  f.finish(comm);
  interior_of(spec, f.t, x_bar);
  padded_bar = std::move(f.t);
}

int64_t start_exchange(Communicator& comm,
                       const GridLayout& layout,
                       const HaloSpec& spec,
                       const Tensor& x) {
  Tensor padded(padded_shape(x.shape(), spec));
  copy_interior(layout, spec, comm.rank(), x, padded, false);
  if (!spec.corners) zero_ghosts(spec, padded);
  return launch(
      comm, std::make_unique<Flight>(layout, spec, false, std::move(padded)));
}

void finish_exchange(Communicator& comm, int64_t ticket, Tensor& padded) {
  std::unique_ptr<Flight> f = land(comm, ticket);
  ADGRAPH_CHECK(f->t.shape() == padded.shape()) << "padded shape";
  padded.swap(f->t);
}

bool messages_along(const GridLayout& layout, int rank, int a) {
  thread_local std::vector<int> dir;
  dir.assign(layout.ndim(), 0);
  for (int side : {-1, 1}) {
    dir[a] = side;
    const int peer = layout.neighbour(rank, dir);
    if (peer >= 0 && peer != rank) return true;
  }
  return false;
}

int64_t start_exchange_into(Communicator& comm,
                            const GridLayout& layout,
                            const HaloSpec& spec,
                            const Tensor& x,
                            Tensor& padded) {
  copy_interior(layout, spec, comm.rank(), x, padded, true);
  if (!spec.corners) zero_ghosts(spec, padded);
  // Without corners the passes write disjoint ghosts, so an axis filled
  // here is not filled again. With corners a pass copies the ghosts of the
  // passes before it: the axes without messages that precede every axis
  // with messages are filled here as the exchange would fill them (so the
  // first axis with messages leaves at once), the later ones again in
  // order as the exchange finishes.
  thread_local std::vector<bool> landed;
  landed.assign(layout.ndim(), false);
  bool before_messages = true;
  for (int a = 0; a < layout.ndim(); ++a) {
    if (spec.width[a] == 0) continue;
    if (messages_along(layout, comm.rank(), a)) {
      before_messages = false;
      continue;
    }
    Swap none;
    land_forward(pass_of(layout, spec, comm.rank(), padded.shape(), a),
                 spec.rule,
                 none,
                 padded);
    landed[a] = !spec.corners || before_messages;
  }
  return launch(comm, std::make_unique<Flight>(layout, spec, padded, landed));
}

void finish_exchange_into(Communicator& comm, int64_t ticket) {
  land(comm, ticket);
}

int64_t start_exchange_transpose(Communicator& comm,
                                 const GridLayout& layout,
                                 const HaloSpec& spec,
                                 const Tensor& padded_bar) {
  return launch(comm, std::make_unique<Flight>(layout, spec, true, padded_bar));
}

void finish_exchange_transpose(Communicator& comm,
                               int64_t ticket,
                               Tensor& x_bar) {
  std::unique_ptr<Flight> f = land(comm, ticket);
  interior_of(f->spec, f->t, x_bar);
}

}  // namespace adgraph::grid::detail

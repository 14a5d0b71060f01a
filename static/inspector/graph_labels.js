// Where the agents graph puts its edge labels: no label on another label or on an agent, and,
// where a free place allows, on no other edge's line. Each label tries places along its own
// curve first, then stacked above and below its place; a grid of cells keeps every test local,
// so a graph of hundreds of rules places its labels in about linear time.

const CELL = 40; // the grid's cell, in the drawing's units
const GAP = 3; // the space kept between two labels, and between a label and an agent
const ALONG = [0, 0.12, -0.12, 0.24, -0.24]; // from the label's place along its curve (of 0..1)
const STACK = 20; // one step up or down: a label's height and a little more
const TIDY_STEPS = 3; // stacked this far at most to find a place off the other edges' lines

class Grid {
  constructor() {
    this.cells = new Map();
  }

  keys({ x, y, width, height }) {
    const keys = [];
    for (let i = Math.floor(x / CELL); i <= Math.floor((x + width) / CELL); i += 1) {
      for (let j = Math.floor(y / CELL); j <= Math.floor((y + height) / CELL); j += 1) keys.push(`${i},${j}`);
    }
    return keys;
  }

  add(item, box) {
    for (const key of this.keys(box)) {
      if (!this.cells.has(key)) this.cells.set(key, []);
      this.cells.get(key).push(item);
    }
  }

  near(box) {
    const found = new Set();
    for (const key of this.keys(box)) for (const item of this.cells.get(key) || []) found.add(item);
    return found;
  }
}

function overlaps(a, b) {
  return a.x < b.x + b.width + GAP && b.x < a.x + a.width + GAP
    && a.y < b.y + b.height + GAP && b.y < a.y + a.height + GAP;
}

function covers(box, point) {
  return point.x > box.x && point.x < box.x + box.width && point.y > box.y && point.y < box.y + box.height;
}

/**
 * Place each label. labels: [{ labelAt, side, at(t) -> {x, y}, box(point, side) -> {x, y, width,
 * height}, curve: [points of its own line], loop }], in the order they claim places;
 * nodes: the agents' boxes. Returns each label's box, in the same order.
 */
export function placeLabels(labels, nodes) {
  const solid = new Grid(); // the agents and the labels placed so far: never overlapped
  const lines = new Grid(); // points along every edge: avoided when a place allows
  nodes.forEach((box) => solid.add({ box }, box));
  labels.forEach((label, owner) => {
    for (const point of label.curve) lines.add({ point, owner }, { x: point.x, y: point.y, width: 0, height: 0 });
  });
  const free = (box) => ![...solid.near(box)].some((item) => overlaps(box, item.box));
  const clear = (box, owner) => ![...lines.near(box)].some((item) => item.owner !== owner && covers(box, item.point));
  return labels.map((label, owner) => {
    const places = candidates(label);
    let chosen = null;
    for (let i = 0; i < places.length && !chosen; i += 1) {
      if (free(places[i]) && clear(places[i], owner)) chosen = places[i];
    }
    for (let i = 0; !chosen; i += 1) { // no place off the lines: any free place, stacked if need be
      const box = i < places.length ? places[i] : stacked(label, TIDY_STEPS + 1 + Math.floor((i - places.length) / 2), i % 2);
      if (free(box)) chosen = box;
    }
    solid.add({ box: chosen }, chosen);
    return chosen;
  });
}

function stacked(label, step, down) {
  const point = label.at(label.labelAt);
  return label.box({ x: point.x, y: point.y + (down ? 1 : -1) * step * STACK });
}

/** The places a label tries first: along its curve, then beside it (left, right), then stacked
 * a few steps down and up. */
function candidates(label) {
  const along = (label.loop ? [0] : ALONG).map((delta) => label.labelAt + delta)
    .filter((t) => t >= 0.15 && t <= 0.85);
  const places = along.map((t) => label.box(label.at(t)));
  for (const side of [-1, 1]) {
    if (side !== label.side) places.push(...along.map((t) => label.box(label.at(t), side)));
  }
  for (let step = 1; step <= TIDY_STEPS; step += 1) places.push(stacked(label, step, 1), stacked(label, step, 0));
  return places;
}

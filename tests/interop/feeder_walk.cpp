// tests/interop/feeder_walk.cpp: walks a Chakra ET file with Chakra's own
// C++ feeder (../shared/interop/chakra/src/feeder, built with it by
// tests/interop/run.py) as a simulator does: it issues the nodes the
// feeder finds free of data dependencies, each starting when the last of
// its parents has finished and lasting its duration_micros, and frees its
// children when it ends. Prints the node count, the time the walk ends,
// and each step's span (from its "begin" boundary node's start to its
// "end" node's end), one "step NAME US" line each; exits 1 when the feeder
// stops with nodes left (a cycle, or a dependency on no node).
#include <cstdio>
#include <map>
#include <string>
#include <unordered_map>

#include "et_feeder.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: feeder_walk FILE.et\n");
    return 2;
  }
  Chakra::ETFeeder feeder(argv[1]);
  std::unordered_map<uint64_t, uint64_t> ready;
  std::map<std::string, std::pair<uint64_t, uint64_t>> steps;
  uint64_t nodes = 0, end = 0;
  while (feeder.hasNodesToIssue()) {
    std::shared_ptr<Chakra::ETFeederNode> node = feeder.getNextIssuableNode();
    if (!node) {
      std::fprintf(stderr, "feeder_walk: stuck after %llu nodes\n", (unsigned long long)nodes);
      return 1;
    }
    uint64_t id = node->id(), start = ready[id], finish = start + node->runtime();
    nodes++;
    end = std::max(end, finish);
    auto chakra = node->getChakraNode();
    for (const auto &a : chakra->attr())
      if (a.name() == "step") {
        auto &s = steps[chakra->name()];
        if (a.string_val() == "begin")
          s.first = start;
        else
          s.second = finish;
      }
    for (auto &child : node->getChildren()) {
      uint64_t &r = ready[child->id()];
      r = std::max(r, finish);
    }
    feeder.freeChildrenNodes(id);
    feeder.removeNode(id);
  }
  std::printf("nodes %llu\nend %llu\n", (unsigned long long)nodes, (unsigned long long)end);
  for (auto &s : steps)
    std::printf("step %s %llu\n", s.first.c_str(), (unsigned long long)(s.second.second - s.second.first));
  return 0;
}

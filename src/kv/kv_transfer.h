// One instruction of the coordinator to every rank about the tiers below the KV pool (host memory,
// disk), carried by a step plan and performed by each rank for its own slice of the block (its
// layers, its KV heads) before the step's forward pass, in plan order. Because the coordinator
// alone decides (kv/kv_tier_directory.h), the ranks' tiers never disagree.
#pragma once

#include <cstdint>
#include <vector>

namespace weft {

struct KvTransfer {
  enum class Kind : uint8_t {
    kSave,     // copy pool block `block` into the host tier under `hash` (the pool evicts it)
    kRestore,  // copy the host tier's `hash` into pool block `block` (a prefix hit below the pool)
    kDrop,     // forget the host tier's `hash` (evicted from the host tier)
    kPersist,  // write pool block `block` to the disk tier under `hash` (its KV was just computed)
    // Read `hash` (naming the prefix parent + tokens) from this rank's disk tier into its host
    // store (multi-rank jobs). A miss still leaves an empty entry under `hash`, so that every
    // rank's store holds the same hashes and the coordinator's later kDrop finds it on each.
    kLoad,
  };
  Kind kind = Kind::kSave;
  uint64_t hash = 0;   // the prefix-cache hash of the block (BlockManager::hash_block)
  int32_t block = -1;  // the pool block (kSave, kRestore, kPersist)
  // kPersist, kLoad: the prefix the hash names (the previous block's hash and this block's tokens), kept
  // in the file so that a fresh process can check a hit as the pool does.
  uint64_t parent = 0;
  std::vector<int32_t> tokens;

  static KvTransfer save(uint64_t hash, int32_t block) { return make(Kind::kSave, hash, block); }
  static KvTransfer restore(uint64_t hash, int32_t block) { return make(Kind::kRestore, hash, block); }
  static KvTransfer drop(uint64_t hash) { return make(Kind::kDrop, hash, -1); }
  static KvTransfer persist(uint64_t hash, int32_t block, uint64_t parent, std::vector<int32_t> tokens) {
    KvTransfer t = make(Kind::kPersist, hash, block);
    t.parent = parent;
    t.tokens = std::move(tokens);
    return t;
  }
  static KvTransfer load(uint64_t hash, uint64_t parent, std::vector<int32_t> tokens) {
    KvTransfer t = make(Kind::kLoad, hash, -1);
    t.parent = parent;
    t.tokens = std::move(tokens);
    return t;
  }
  bool uses_block() const { return kind != Kind::kDrop && kind != Kind::kLoad; }
  bool operator==(const KvTransfer&) const = default;

 private:
  static KvTransfer make(Kind kind, uint64_t hash, int32_t block) {
    KvTransfer t;
    t.kind = kind;
    t.hash = hash;
    t.block = block;
    return t;
  }
};

}  // namespace weft

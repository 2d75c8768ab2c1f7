package ledger

import "crypto/sha256"

// MerkleRoot is the Merkle tree hash of RFC 6962 (section 2.1) over leaf
// hashes (LeafHash: SHA-256 of 0x00 and the leaf): an interior node is
// SHA-256 of 0x01 and its two children, a tree of n leaves splits at the
// largest power of two below n, and the empty tree is SHA-256 of nothing.
// Any change to a leaf, their order or their number changes the root.
func MerkleRoot(leaves []Hash) Hash {
	if len(leaves) == 0 {
		return sha256.Sum256(nil)
	}
	return merkle(leaves)
}

func merkle(leaves []Hash) Hash {
	if len(leaves) == 1 {
		return leaves[0]
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	left, right := merkle(leaves[:k]), merkle(leaves[k:])
	var node [1 + 2*len(Hash{})]byte
	node[0] = 1
	copy(node[1:], left[:])
	copy(node[1+len(left):], right[:])
	return sha256.Sum256(node[:])
}

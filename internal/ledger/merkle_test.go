package ledger_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/ledger"
)

// The tree heads of RFC 6962's reference leaves (Certificate
// Transparency's test data), for every size from 0 to 8: a root no other
// implementation agrees with proves nothing to anyone else.
func TestMerkleRootMatchesRFC6962(t *testing.T) {
	leaves := []string{"", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"}
	roots := []string{
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
		"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
		"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
		"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
		"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
		"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
		"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
		"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
	}
	hashes := make([]ledger.Hash, len(leaves))
	for i, l := range leaves {
		b, _ := hex.DecodeString(l)
		hashes[i] = sha256.Sum256(append([]byte{0}, b...))
	}
	for n := range len(roots) {
		assert.Equal(t, roots[n], ledger.MerkleRoot(hashes[:n]).String(), "size %d", n)
	}
}

// Changing, dropping, adding or swapping any leaf changes the root.
func TestMerkleRootCommitsToEveryLeaf(t *testing.T) {
	leaves := make([]ledger.Hash, 37)
	for i := range leaves {
		leaves[i] = sha256.Sum256([]byte{byte(i)})
	}
	root := ledger.MerkleRoot(leaves)
	for i := range leaves {
		changed := append([]ledger.Hash(nil), leaves...)
		changed[i][0] ^= 1
		assert.NotEqual(t, root, ledger.MerkleRoot(changed), "leaf %d changed", i)
		dropped := append(append([]ledger.Hash(nil), leaves[:i]...), leaves[i+1:]...)
		assert.NotEqual(t, root, ledger.MerkleRoot(dropped), "leaf %d dropped", i)
		if i > 0 {
			swapped := append([]ledger.Hash(nil), leaves...)
			swapped[i], swapped[i-1] = swapped[i-1], swapped[i]
			assert.NotEqual(t, root, ledger.MerkleRoot(swapped), "leaves %d and %d swapped", i-1, i)
		}
	}
	assert.NotEqual(t, root, ledger.MerkleRoot(append(append([]ledger.Hash(nil), leaves...), leaves[0])), "a leaf added")
}

package boot

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// keyBytes is the size of a job key; nonceBytes of the server's challenge.
const (
	keyBytes   = 32
	nonceBytes = 32
)

// helloMagic starts the server's first message, so that a client pointed at
// something else fails with a clear message.
const helloMagic = "libacp-rendezvous-1"

// NewKey returns a fresh random job key in hex, for ACP_JOB_KEY.
func NewKey() string {
	k := make([]byte, keyBytes)
	_, _ = rand.Read(k) // never fails on Linux (Go 1.24+ crashes instead)
	return hex.EncodeToString(k)
}

func decodeKey(key string) ([]byte, error) {
	k, err := hex.DecodeString(key)
	if err != nil || len(k) == 0 {
		return nil, fmt.Errorf("job key (ACP_JOB_KEY) is not a non-empty hex string")
	}
	return k, nil
}

// authMAC proves knowledge of the key for this nonce, rank and size without
// sending the key.
func authMAC(key, nonce []byte, rank, size int) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(nonce)
	var rs [8]byte
	binary.BigEndian.PutUint32(rs[:4], uint32(rank))
	binary.BigEndian.PutUint32(rs[4:], uint32(size))
	m.Write(rs[:])
	return m.Sum(nil)
}

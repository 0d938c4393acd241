package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/redisstore"
)

// Open a store shared by the replicas of one deployment; the password
// comes from the environment, never from a file. (Not run: it needs a
// Redis server.)
func ExampleOpen() {
	url := "redis://:" + os.Getenv("REDIS_PASSWORD") + "@redis.internal:6379/0"
	s, err := redisstore.Open(url, &redisstore.Options{Prefix: "conduit-prod:"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	taint, err := s.Members(ctx, "principal/alice")
	if errors.Is(err, store.ErrUnavailable) {
		// Fail closed: without the taint, the call is not sent.
		log.Print("store unavailable; refusing the call")
		return
	}
	fmt.Println(taint)
}

package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

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

// A store on a client configured by hand, here a Sentinel failover
// client; its owner closes it. (Not run: it needs Redis.)
func ExampleNew() {
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "conduit",
		SentinelAddrs: []string{"sentinel-1:26379", "sentinel-2:26379", "sentinel-3:26379"},
		Password:      os.Getenv("REDIS_PASSWORD"),
	})
	defer rdb.Close()
	s := redisstore.New(rdb, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	w, err := s.Hit(ctx, "alice/fs__write_file", 60, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	if !w.Allowed {
		fmt.Printf("rate limited: retry in %v\n", w.Reset.Round(time.Second))
	}
}

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "vpipe/pipeline/graph/queue.hpp"

using namespace std::chrono_literals;
using vpipe::BoundedQueue;

TEST(BoundedQueue, DeliversInOrderThenEndOfStream) {
  BoundedQueue<int> q(4);
  q.add_producer();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(q.push(i));
  q.close();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(q.pop(), i);
  EXPECT_EQ(q.pop(), std::nullopt);
}

TEST(BoundedQueue, FullQueueBlocksProducerUntilConsumerPops) {
  BoundedQueue<int> q(2);
  q.add_producer();
  ASSERT_TRUE(q.push(1));
  ASSERT_TRUE(q.push(2));
  std::atomic<bool> third_pushed{false};
  std::thread producer([&] {
    q.push(3);
    third_pushed = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(third_pushed.load()) << "push into a full queue must block";
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.pop(), 1);
  producer.join();
  EXPECT_TRUE(third_pushed.load());
  EXPECT_EQ(q.stats().high_water, 2u);
  EXPECT_GT(q.stats().producer_blocked_s, 0.02);
}

TEST(BoundedQueue, EndOfStreamWaitsForEveryProducer) {
  BoundedQueue<int> q(4);
  q.add_producer();
  q.add_producer();
  q.push(1);
  q.close();
  EXPECT_EQ(q.pop(), 1);
  std::atomic<bool> ended{false};
  std::thread consumer([&] {
    EXPECT_EQ(q.pop(), 2);
    EXPECT_EQ(q.pop(), std::nullopt);
    ended = true;
  });
  std::this_thread::sleep_for(30ms);
  EXPECT_FALSE(ended.load()) << "one producer is still open";
  q.push(2);
  q.close();
  consumer.join();
  EXPECT_TRUE(ended.load());
}

TEST(BoundedQueue, CancelWakesBlockedProducerAndConsumer) {
  BoundedQueue<int> full(1), empty(1);
  full.add_producer();
  empty.add_producer();
  full.push(0);
  std::optional<bool> push_result;
  std::optional<std::optional<int>> pop_result;
  std::thread producer([&] { push_result = full.push(1); });
  std::thread consumer([&] { pop_result = empty.pop(); });
  std::this_thread::sleep_for(30ms);
  full.cancel();
  empty.cancel();
  producer.join();
  consumer.join();
  EXPECT_EQ(push_result, false);
  ASSERT_TRUE(pop_result.has_value());
  EXPECT_EQ(*pop_result, std::nullopt);
  EXPECT_TRUE(full.cancelled());
}

TEST(BoundedQueue, StopReadingMakesPushFailAndDropsItems) {
  BoundedQueue<int> q(1);
  q.add_producer();
  q.push(1);
  std::optional<bool> blocked_push;
  std::thread producer([&] { blocked_push = q.push(2); });
  std::this_thread::sleep_for(30ms);
  q.stop_reading();
  producer.join();
  EXPECT_EQ(blocked_push, false);
  EXPECT_EQ(q.size(), 0u);
  EXPECT_FALSE(q.push(3));
}

TEST(BoundedQueue, DropOldestKeepsTheNewestAndNeverBlocks) {
  BoundedQueue<int> q(3);
  q.set_policy(vpipe::DropPolicy::kDropOldest);
  q.add_producer();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(q.push(i)) << "a full queue does not block or fail";
  q.close();
  for (int i = 7; i < 10; ++i) EXPECT_EQ(q.pop(), i);
  EXPECT_EQ(q.pop(), std::nullopt);
  const auto s = q.stats();
  EXPECT_EQ(s.dropped, 7u);
  EXPECT_EQ(s.high_water, 3u) << "bounded";
  EXPECT_EQ(s.producer_blocked_s, 0.0);
}

TEST(BoundedQueue, DropNewestKeepsWhatIsQueued) {
  BoundedQueue<int> q(3);
  q.set_policy(vpipe::DropPolicy::kDropNewest);
  q.add_producer();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(q.push(i));
  q.close();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(q.pop(), i);
  EXPECT_EQ(q.pop(), std::nullopt);
  EXPECT_EQ(q.stats().dropped, 7u);
}

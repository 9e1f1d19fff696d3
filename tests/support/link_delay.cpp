// link_delay QUEUE DELAY_MS: holds every packet the kernel hands to netfilter queue QUEUE
// for DELAY_MS, then lets it go on, in arrival order. With iptables rules sending a
// link's packets to the queue, that link gets a propagation delay: what netem's "delay"
// does, on kernels (like this project's machines) built without netem. Prints "ready"
// once the queue is bound; runs until SIGTERM/SIGINT. Test support only.
#include <arpa/inet.h>  // before the netfilter headers, which include linux/in.h
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace {

using Clock = std::chrono::steady_clock;

struct Held {
  uint32_t id;
  Clock::time_point due;
};

struct State {
  std::deque<Held> held;  // a constant delay keeps them in due order
  Clock::duration delay{};
};

volatile sig_atomic_t stopping = 0;
void on_signal(int) { stopping = 1; }

int on_packet(nfq_q_handle*, nfgenmsg*, nfq_data* data, void* opaque) {
  auto* state = static_cast<State*>(opaque);
  const nfqnl_msg_packet_hdr* header = nfq_get_msg_packet_hdr(data);
  if (header) state->held.push_back({ntohl(header->packet_id), Clock::now() + state->delay});
  return 0;
}

int fail(const char* what) {
  std::fprintf(stderr, "link_delay: %s: %s\n", what, std::strerror(errno));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: link_delay QUEUE DELAY_MS\n");
    return 2;
  }
  const int queue = std::atoi(argv[1]);
  const double delay_ms = std::atof(argv[2]);
  if (queue < 0 || queue > 65535 || !(delay_ms >= 0 && delay_ms < 10000)) {
    std::fprintf(stderr, "link_delay: QUEUE must be 0-65535 and DELAY_MS 0-10000\n");
    return 2;
  }
  State state;
  state.delay = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(delay_ms));
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);

  nfq_handle* handle = nfq_open();
  if (!handle) return fail("nfq_open");
  nfq_q_handle* qh = nfq_create_queue(handle, static_cast<uint16_t>(queue), on_packet, &state);
  if (!qh) return fail("nfq_create_queue (is another process bound to this queue?)");
  // Metadata only (the verdict needs the id, not the bytes); whole GSO packets, so a
  // 64 KiB burst is one entry, not 45; a queue deep enough for a rate-limited link's
  // window, and a socket buffer that does not overflow while packets are held.
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) return fail("nfq_set_mode");
  nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
  nfq_set_queue_maxlen(qh, 65536);
  nfnl_rcvbufsiz(nfq_nfnlh(handle), 16 << 20);
  const int fd = nfq_fd(handle);
  std::printf("ready\n");
  std::fflush(stdout);

  alignas(8) char buffer[65536];
  while (!stopping) {
    timespec timeout{0, 100'000'000};  // wake now and then to notice a signal
    if (!state.held.empty()) {
      const auto wait = std::max(Clock::duration::zero(), state.held.front().due - Clock::now());
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
      timeout = {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ppoll(&p, 1, &timeout, nullptr);
    if (ready < 0 && errno != EINTR) return fail("ppoll");
    if (ready > 0) {
      // Drain what is there without blocking: every packet gets its arrival time now.
      while (true) {
        const ssize_t n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0 && errno == ENOBUFS) continue;  // the kernel dropped some: a lossy link
        if (n < 0) return fail("recv");
        nfq_handle_packet(handle, buffer, static_cast<int>(n));
      }
    }
    const auto now = Clock::now();
    while (!state.held.empty() && state.held.front().due <= now) {
      nfq_set_verdict(qh, state.held.front().id, NF_ACCEPT, 0, nullptr);
      state.held.pop_front();
    }
  }
  // Let what is held go, so that a link in use is not left with lost packets.
  for (const auto& h : state.held) nfq_set_verdict(qh, h.id, NF_ACCEPT, 0, nullptr);
  nfq_destroy_queue(qh);
  nfq_close(handle);
  return 0;
}

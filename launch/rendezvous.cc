#include "launch/rendezvous.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>

#include "launch/launcher.h"  // LaunchError
#include "trace/clock.h"

namespace dsdiag::launch {

int PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw LaunchError(std::string("cannot create a socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    close(fd);
    throw LaunchError(std::string("cannot find a free port on 127.0.0.1: ") + std::strerror(err));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::string MakeRunId(int64_t wall_ns) {
  if (wall_ns < 0) wall_ns = trace::WallNs();
  const std::time_t now = static_cast<std::time_t>(wall_ns / 1000000000);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", static_cast<unsigned>(random()));
  return std::string(stamp) + "-" + suffix;
}

}  // namespace dsdiag::launch

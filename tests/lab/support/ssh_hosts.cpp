#include "lab/support/ssh_hosts.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace fs = std::filesystem;

namespace edgeprobe::test_support {
namespace {

constexpr int kFirstPort = 2222;
constexpr int kStartTimeoutS = 15;
const char* const kSshd = "/usr/sbin/sshd";
const char* const kSsh = "/usr/bin/ssh";
const char* const kSshKeygen = "/usr/bin/ssh-keygen";

void check(const ProcessResult& r, const std::string& what) {
  if (r.exit_code != 0)
    throw std::runtime_error(what + " failed (exit " + std::to_string(r.exit_code) + "): " + r.err);
}

// useradd and userdel lock /etc/passwd; concurrent test processes retry instead of failing.
ProcessResult run_with_passwd_lock_retries(const std::vector<std::string>& argv) {
  ProcessResult r;
  for (int attempt = 0; attempt < 50; ++attempt) {
    r = run_process(argv, 20);
    if (r.exit_code == 0 || r.err.find("lock") == std::string::npos) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return r;
}

// A Unix user for one device, deleted with the object.
class UnixUser {
 public:
  UnixUser(const std::string& name, const std::string& home) : name_(name) {
    // "*" (not the default "!") as password: a locked account may not log in with a key
    // when sshd runs without PAM.
    check(run_with_passwd_lock_retries({find_tool("useradd"), "--no-create-home", "--home-dir", home,
                                        "--shell", "/bin/sh", "--password", "*", "--user-group", name}),
          "useradd " + name);
    const passwd* pw = getpwnam(name.c_str());
    if (!pw) {
      remove();
      throw std::runtime_error("useradd " + name + " succeeded but the user is not in the password database");
    }
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
  }
  ~UnixUser() { remove(); }
  UnixUser(const UnixUser&) = delete;
  UnixUser& operator=(const UnixUser&) = delete;
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }

 private:
  void remove() {
    try {
      run_with_passwd_lock_retries({find_tool("userdel"), "--force", name_});
    } catch (...) {
    }
  }
  std::string name_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

void chown_tree(const std::string& path, uid_t uid, gid_t gid) {
  if (lchown(path.c_str(), uid, gid) != 0) throw std::runtime_error("cannot chown " + path);
  for (const auto& entry : fs::recursive_directory_iterator(path))
    if (lchown(entry.path().c_str(), uid, gid) != 0)
      throw std::runtime_error("cannot chown " + entry.path().string());
}

void make_key(const std::string& path, const std::string& comment) {
  check(run_process({kSshKeygen, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path}, 30),
        "ssh-keygen " + path);
}

// "ssh-ed25519 AAAA... comment" -> "ssh-ed25519 AAAA..."
std::string public_key_of(const std::string& pub_path) {
  std::istringstream in(read_file(pub_path));
  std::string type, key;
  in >> type >> key;
  if (type.empty() || key.empty()) throw std::runtime_error("cannot read the public key " + pub_path);
  return type + " " + key;
}

bool accepts_connections(const std::string& address, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, address.c_str(), &sa.sin_addr);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
  close(fd);
  return ok;
}

// fork/exec with stdout and stderr appended to a log file; the child gets its own process
// group and none of the test's descriptors.
pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    const int null = open("/dev/null", O_RDONLY);
    if (log < 0 || null < 0) _exit(127);
    dup2(null, STDIN_FILENO);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    close_range(3, ~0U, 0);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  return pid;
}

bool valid_host_name(const std::string& name) {
  static const std::regex pattern(R"([A-Za-z0-9][A-Za-z0-9._-]{0,40})");
  return std::regex_match(name, pattern);
}

std::string source_dir() { return EDGEPROBE_SOURCE_DIR; }

}  // namespace

// The fixture's directory, named with the pid so a sweep can tell a dead test's apart.
class SshHosts::Workspace {
 public:
  Workspace() {
    std::string tmpl =
        (fs::temp_directory_path() / ("edgeprobe-sshhosts-" + std::to_string(getpid()) + "-XXXXXX")).string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + " failed");
    path_ = tmpl;
  }
  ~Workspace() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class SshHosts::Device {
 public:
  Device(const SshHostSpec& spec, int index, const std::string& root, const std::string& client_ssh_dir) {
    static std::atomic<int> counter{0};
    host.name = spec.name;
    host.aarch64 = spec.aarch64;
    host.port = kFirstPort + index;
    host.user = "ep" + std::to_string(getpid()) + "u" + std::to_string(counter++);
    ns = std::make_unique<NetNamespace>(spec.name);
    link = connect(*ns, index);
    host.address = link.ns_ip;

    // The device's side: the user's home (its workdir inside), sshd's own files apart.
    const std::string user_home = root + "/devices/" + spec.name;
    host.workdir = user_home + "/work";
    sshd_dir_ = root + "/sshd/" + spec.name;
    fs::create_directories(host.workdir);
    fs::create_directories(user_home + "/.ssh");
    fs::create_directories(sshd_dir_);
    fs::permissions(sshd_dir_, fs::perms::owner_all);

    host.identity_file = client_ssh_dir + "/id_" + spec.name;
    make_key(host.identity_file, host.user + "@client");
    make_key(sshd_dir_ + "/ssh_host_ed25519_key", "host " + spec.name);
    write_file(user_home + "/.ssh/authorized_keys", public_key_of(host.identity_file + ".pub") + "\n");
    fs::permissions(user_home + "/.ssh/authorized_keys", fs::perms::owner_read | fs::perms::owner_write);
    fs::permissions(user_home + "/.ssh", fs::perms::owner_all);
    std::string path_entry;
    if (spec.aarch64) {
      // uname is the one x86 tell a controller asks a device; its arm64 programs really run
      // under qemu-aarch64 through binfmt_misc.
      fs::create_directories(user_home + "/bin");
      write_file(
          user_home + "/bin/uname",
          "#!/bin/sh\n# This test device is an aarch64 one: its arm64 programs run under qemu-aarch64.\n"
          "/bin/uname \"$@\" | /bin/sed 's/x86_64/aarch64/g'\n");
      fs::permissions(user_home + "/bin/uname", fs::perms::owner_all | fs::perms::group_read |
                                                    fs::perms::group_exec | fs::perms::others_read |
                                                    fs::perms::others_exec);
      path_entry = "SetEnv PATH=" + user_home + "/bin:/usr/local/bin:/usr/bin:/bin\n";
    }
    user_ = std::make_unique<UnixUser>(host.user, user_home);
    chown_tree(user_home, user_->uid(), user_->gid());

    write_file(sshd_dir_ + "/sshd_config", "ListenAddress " + host.address + ":" + std::to_string(host.port) +
                                               "\n" + "HostKey " + sshd_dir_ +
                                               "/ssh_host_ed25519_key\n"
                                               "PidFile none\n"
                                               "AuthorizedKeysFile .ssh/authorized_keys\n"
                                               "AllowUsers " +
                                               host.user +
                                               "\n"
                                               "PermitRootLogin no\n"
                                               "PubkeyAuthentication yes\n"
                                               "PasswordAuthentication no\n"
                                               "KbdInteractiveAuthentication no\n"
                                               "UsePAM no\n"
                                               "UseDNS no\n"
                                               "PrintMotd no\n"
                                               "PrintLastLog no\n"
                                               "MaxStartups 64:30:128\n"
                                               "MaxSessions 64\n"
                                               "LoginGraceTime 20\n"
                                               "ClientAliveInterval 5\n"
                                               "ClientAliveCountMax 3\n"
                                               "Subsystem sftp internal-sftp\n"
                                               "LogLevel VERBOSE\n" +
                                               path_entry);
    start_sshd();
  }

  ~Device() { stop_sshd(); }

  void start_sshd() {
    stop_sshd();
    std::vector<std::string> argv = ns->exec_prefix();
    argv.insert(argv.end(), {kSshd, "-D", "-e", "-f", sshd_dir_ + "/sshd_config"});
    sshd_pid_ = spawn_logged(argv, sshd_dir_ + "/sshd.log");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kStartTimeoutS);
    while (!accepts_connections(host.address, host.port)) {
      int status = 0;
      if (waitpid(sshd_pid_, &status, WNOHANG) == sshd_pid_) {
        sshd_pid_ = -1;
        throw std::runtime_error("sshd for " + host.name +
                                 " exited at start: " + read_file(sshd_dir_ + "/sshd.log"));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        stop_sshd();
        throw std::runtime_error("sshd for " + host.name + " did not listen on " + host.address + ":" +
                                 std::to_string(host.port) + " within " + std::to_string(kStartTimeoutS) +
                                 " s: " + read_file(sshd_dir_ + "/sshd.log"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  void stop_sshd() {
    if (ns) ns->kill_all();
    if (sshd_pid_ <= 0) return;
    kill(sshd_pid_, SIGKILL);
    // Bounded: SIGKILL ends it at once unless it is stuck in the kernel.
    for (int i = 0; i < 500 && waitpid(sshd_pid_, nullptr, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    sshd_pid_ = -1;
  }

  std::string log() const { return read_file(sshd_dir_ + "/sshd.log"); }

  SshHost host;
  std::unique_ptr<NetNamespace> ns;  // declared before user_: the user goes first
  VethLink link;

 private:
  std::unique_ptr<UnixUser> user_;
  std::string sshd_dir_;
  pid_t sshd_pid_ = -1;
};

std::optional<std::string> SshHosts::unavailable() {
  if (geteuid() != 0) return "needs root (sshd devices run as their own Unix users in network namespaces)";
  if (access(kSshd, X_OK) != 0) return std::string(kSshd) + " is missing (apt-get install openssh-server)";
  if (access(kSsh, X_OK) != 0 || access(kSshKeygen, X_OK) != 0)
    return "ssh or ssh-keygen is missing (apt-get install openssh-client)";
  if (find_tool("useradd").empty() || find_tool("userdel").empty())
    return "useradd/userdel are missing (passwd)";
  if (find_tool("unshare").empty()) return "unshare is missing (util-linux)";
  return netns_unavailable();
}

std::optional<std::string> SshHosts::aarch64_unavailable() {
  static std::once_flag once;
  static std::optional<std::string> reason;
  std::call_once(once, [] {
    const auto r = run_process({"/bin/sh", source_dir() + "/scripts/setup-binfmt.sh"}, 60);
    if (r.exit_code != 0) reason = "cannot run aarch64 programs through binfmt_misc: " + r.err;
  });
  return reason;
}

void sweep_stale_ssh_hosts() {
  static const std::regex stale_user(R"(^ep(\d+)u\d+$)");
  std::istringstream in(read_file("/etc/passwd"));
  for (std::string line; std::getline(in, line);) {
    const std::string name = line.substr(0, line.find(':'));
    std::smatch m;
    if (std::regex_match(name, m, stale_user) && !pid_alive(std::stol(m[1])))
      run_with_passwd_lock_retries({find_tool("userdel"), "--force", name});
  }
  static const std::regex stale_dir(R"(^edgeprobe-sshhosts-(\d+)-.{6}$)");
  std::error_code ec;
  for (auto it = fs::directory_iterator(fs::temp_directory_path(), ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::smatch m;
    std::error_code remove_ec;
    if (std::regex_match(name, m, stale_dir) && !pid_alive(std::stol(m[1])))
      fs::remove_all(it->path(), remove_ec);
  }
}

SshHosts::SshHosts(std::vector<SshHostSpec> specs) {
  if (const auto why = unavailable()) throw std::runtime_error("SshHosts: " + *why);
  static std::once_flag swept;
  std::call_once(swept, sweep_stale_ssh_hosts);
  std::set<std::string> seen;
  for (const auto& spec : specs) {
    if (!valid_host_name(spec.name))
      throw std::invalid_argument("SshHosts: bad host name '" + spec.name + "'");
    if (!seen.insert(spec.name).second)
      throw std::invalid_argument("SshHosts: host '" + spec.name + "' twice");
    if (spec.aarch64)
      if (const auto why = aarch64_unavailable())
        throw std::runtime_error("SshHosts: " + spec.name + ": " + *why);
  }
  if (specs.size() > 63) throw std::invalid_argument("SshHosts: at most 63 hosts");

  // sshd refuses to start without its privilege separation directory (made by Debian's
  // service unit, which these tests do not use).
  fs::create_directories("/run/sshd");
  fs::permissions("/run/sshd", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                   fs::perms::others_read | fs::perms::others_exec);
  dir_ = std::make_unique<Workspace>();
  // The device users must reach their homes below it; nothing in it is secret beyond a test.
  fs::permissions(dir_->path(), fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  const std::string ssh_dir = home() + "/.ssh";
  fs::create_directories(ssh_dir);
  fs::permissions(home(), fs::perms::owner_all);
  fs::permissions(ssh_dir, fs::perms::owner_all);

  std::string config, known_hosts;
  for (size_t i = 0; i < specs.size(); ++i) {
    devices_.push_back(std::make_unique<Device>(specs[i], static_cast<int>(i), dir_->path(), ssh_dir));
    const SshHost& h = devices_.back()->host;
    const std::string host_key =
        public_key_of(dir_->path() + "/sshd/" + h.name + "/ssh_host_ed25519_key.pub");
    known_hosts += "[" + h.address + "]:" + std::to_string(h.port) + " " + host_key + "\n";
    config += "Host " + h.name + "\n" + "  HostName " + h.address + "\n" + "  User " + h.user + "\n" +
              "  Port " + std::to_string(h.port) + "\n" + "  IdentityFile " + h.identity_file + "\n" +
              "  IdentitiesOnly yes\n" + "  UserKnownHostsFile " + ssh_dir + "/known_hosts\n" +
              "  GlobalKnownHostsFile /dev/null\n" + "  StrictHostKeyChecking yes\n" +
              "  UpdateHostKeys no\n" + "  BatchMode yes\n" + "  ConnectTimeout 5\n" +
              "  ServerAliveInterval 2\n" + "  ServerAliveCountMax 3\n" + "  LogLevel ERROR\n";
  }
  write_file(ssh_dir + "/config", config);
  write_file(ssh_dir + "/known_hosts", known_hosts);
  for (const char* file : {"/config", "/known_hosts"})
    fs::permissions(ssh_dir + file, fs::perms::owner_read | fs::perms::owner_write);
}

SshHosts::~SshHosts() = default;  // devices_ go first (sshd, user, namespace), then dir_

SshHosts::Device& SshHosts::device(const std::string& name) const {
  for (const auto& d : devices_)
    if (d->host.name == name) return *d;
  throw std::invalid_argument("SshHosts: no host named '" + name + "'");
}

const SshHost& SshHosts::host(const std::string& name) const { return device(name).host; }

std::vector<std::string> SshHosts::names() const {
  std::vector<std::string> names;
  for (const auto& d : devices_) names.push_back(d->host.name);
  return names;
}

std::string SshHosts::home() const { return dir_->path() + "/home"; }

std::vector<std::string> SshHosts::ssh_command(const std::string& name) const {
  return {kSsh, "-F", ssh_config(), host(name).name};
}

std::vector<std::string> SshHosts::client_prefix() const {
  const passwd* pw = getpwuid(geteuid());
  const std::string user_ssh = std::string(pw && pw->pw_dir ? pw->pw_dir : "/root") + "/.ssh";
  std::error_code ec;
  if (!fs::exists(user_ssh, ec)) {
    fs::create_directories(user_ssh, ec);  // an empty mount point; left for the next test
    fs::permissions(user_ssh, fs::perms::owner_all, ec);
  }
  // The bind mount lives only in the new mount namespace, so it goes with the command.
  return {find_tool("unshare"),
          "--mount",
          "--propagation",
          "private",
          "/usr/bin/env",
          "HOME=" + home(),
          "/bin/sh",
          "-c",
          "mount --bind \"$1\" \"$2\" && shift 2 && exec \"$@\"",
          "edgeprobe-ssh-client",
          home() + "/.ssh",
          user_ssh};
}

void SshHosts::kill_sshd(const std::string& name) { device(name).stop_sshd(); }

void SshHosts::restart_sshd(const std::string& name) { device(name).start_sshd(); }

const VethLink& SshHosts::link(const std::string& name) const { return device(name).link; }

const NetNamespace& SshHosts::netns(const std::string& name) const { return *device(name).ns; }

std::string SshHosts::sshd_log(const std::string& name) const { return device(name).log(); }

}  // namespace edgeprobe::test_support

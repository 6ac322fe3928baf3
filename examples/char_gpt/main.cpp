// char_gpt: trains a small character-level GPT on a text corpus (default: data/kjv.txt), with a
// progress bar, periodic validation, text samples before and after, checkpoint save and resume,
// and a final machine-readable line `final val_loss=<x>`. `char_gpt --help` lists the flags.
#include <kiln/autograd.h>
#include <kiln/cuda.h>
#include <kiln/kiln.h>
#include <kiln/nn/nn.h>
#include <kiln/optim/optim.h>
#include <kiln/serialize.h>

#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

#include "data.h"
#include "model.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::map<std::string, std::string> v;
  std::string get(const std::string& k, const std::string& d) const {
    auto it = v.find(k);
    return it == v.end() ? d : it->second;
  }
  int64_t i(const std::string& k, int64_t d) const { return std::stoll(get(k, std::to_string(d))); }
  double f(const std::string& k, double d) const { return std::stod(get(k, std::to_string(d))); }
  bool has(const std::string& k) const { return v.count(k) != 0; }
};

const char* kHelp = R"(char_gpt: train a character-level GPT.
  --data PATH          corpus (default: the repository's data/kjv.txt)
  --device D           auto | cpu | cuda (default auto: cuda when a GPU is present and a probe
                       step of a tiny model runs there, else the CPU, saying why)
  --steps N            training steps (default 600 on the CPU, 2000 on a GPU)
  --batch N --block N  sequences per step and context length (CPU 16 x 64, GPU 64 x 256)
  --layers N --heads N --embd N   model size (CPU 4/4/128, GPU 6/6/384)
  --lr X               peak learning rate (default 2e-3 CPU, 1e-3 GPU; warmup + cosine decay)
  --dropout X          dropout probability (default 0 CPU, 0.1 GPU)
  --eval-every N       validation every N steps (default 100), over --eval-batches N (default 8)
  --max-minutes X      stop training early after X minutes (default 4.5)
  --checkpoint PATH    checkpoint file prefix (default char_gpt_ckpt); written at the end
  --resume             continue from the checkpoint's weights, optimizer state and step
  --sample-chars N     length of the text samples (default 240)
  --seed N             random seed (default 1337)
  --threads N          CPU threads (default: all cores)
)";

Flags parse(int argc, char** argv) {
  Flags fl;
  for (int a = 1; a < argc; ++a) {
    std::string s = argv[a];
    if (s == "--help" || s == "-h") {
      std::cout << kHelp;
      std::exit(0);
    }
    KILN_CHECK(s.rfind("--", 0) == 0, "[char_gpt] unexpected argument '", s, "' (try --help)");
    s = s.substr(2);
    if (auto eq = s.find('='); eq != std::string::npos) {
      fl.v[s.substr(0, eq)] = s.substr(eq + 1);
    } else if (s == "resume") {
      fl.v[s] = "1";
    } else {
      KILN_CHECK(a + 1 < argc, "[char_gpt] flag --", s, " needs a value");
      fl.v[s] = argv[++a];
    }
  }
  return fl;
}

std::string fmt_time(double s) {
  char buf[32];
  const int m = static_cast<int>(s) / 60, sec = static_cast<int>(s) % 60;
  std::snprintf(buf, sizeof buf, "%dm%02ds", m, sec);
  return buf;
}

// Mean cross-entropy over `batches` random batches of one split, without recording a graph.
double evaluate(char_gpt::GPT& model, const char_gpt::Corpus& data, bool train, int64_t batches,
                int64_t B, int64_t T, std::mt19937_64& rng, kiln::Device dev) {
  kiln::NoGradGuard no_grad;
  model->eval();
  double total = 0;
  for (int64_t i = 0; i < batches; ++i) {
    auto [x, y] = data.batch(train, B, T, rng, dev);
    kiln::Tensor logits = model(x);
    total += kiln::nn::functional::cross_entropy(logits.reshape({B * T, -1}), y.reshape({B * T}))
                 .item<double>();
  }
  model->train();
  return total / static_cast<double>(batches);
}

// Samples n characters after a newline (temperature 0.8), one forward pass per character.
std::string sample(char_gpt::GPT& model, const char_gpt::Corpus& data, int64_t n,
                   kiln::Device dev) {
  kiln::NoGradGuard no_grad;
  model->eval();
  std::vector<int64_t> ctx{data.encode('\n')};
  std::string out;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t T = std::min<int64_t>(static_cast<int64_t>(ctx.size()), model->cfg.block);
    std::vector<int64_t> window(ctx.end() - T, ctx.end());
    kiln::Tensor x = kiln::from_vector(window, {1, T}).to(dev);
    kiln::Tensor logits = model(x).select(1, T - 1).squeeze(0) / 0.8;
    kiln::Tensor probs = kiln::nn::functional::softmax(logits, -1);
    const int64_t next = kiln::multinomial(probs, 1).item<int64_t>();
    ctx.push_back(next);
    out.push_back(data.decode(next));
  }
  model->train();
  return out;
}

// One training step of a tiny model on the GPU, plus the sampling ops: empty when every op the
// demo needs runs there, else the first line of the error (an op without a GPU kernel names
// itself).
std::string gpu_probe() {
  try {
    const kiln::Device dev(kiln::DeviceType::CUDA, 0);
    char_gpt::Config c;
    c.vocab = 7;
    c.block = 8;
    c.layers = 1;
    c.heads = 2;
    c.embd = 8;
    c.dropout = 0.1;
    char_gpt::GPT m(c);
    m->to(dev);
    kiln::optim::AdamW opt(m->parameters(), kiln::optim::AdamWOptions(1e-3).weight_decay(0.1));
    kiln::Tensor x = kiln::randint(c.vocab, {2, c.block}, kiln::TensorOptions(kiln::kInt64))
                         .pin_memory()
                         .to(dev, /*non_blocking=*/true);
    kiln::Tensor loss = kiln::nn::functional::cross_entropy(m(x).reshape({2 * c.block, -1}),
                                                            x.reshape({2 * c.block}));
    opt.zero_grad();
    loss.backward();
    kiln::nn::utils::clip_grad_norm_(m->parameters(), 1.0);
    opt.step();
    kiln::Tensor probs = kiln::nn::functional::softmax(m(x).select(1, 0).select(0, 0), -1);
    (void)kiln::multinomial(probs, 1).item<int64_t>();
    (void)loss.item<double>();
    return "";
  } catch (const std::exception& e) {
    std::string msg = e.what();
    return msg.substr(0, msg.find('\n'));
  }
}

}  // namespace

int main(int argc, char** argv) try {
  const Flags fl = parse(argc, argv);
  std::string dev_name = fl.get("device", "auto");
  if (dev_name == "auto") {
    dev_name = "cpu";
    if (kiln::cuda::is_available()) {
      const std::string why = gpu_probe();
      if (why.empty())
        dev_name = "cuda";
      else
        std::printf(
            "char_gpt: a GPU is present but the probe step failed there (%s); using the "
            "CPU\n",
            why.c_str());
    }
  }
  const kiln::Device dev(dev_name);
  const bool gpu = dev.is_cuda();
  if (fl.has("threads")) kiln::set_num_threads(static_cast<int>(fl.i("threads", 0)));
  const uint64_t seed = static_cast<uint64_t>(fl.i("seed", 1337));
  kiln::manual_seed(seed);
  std::mt19937_64 rng(seed);

  const std::string path = fl.get("data", KILN_CHAR_GPT_DEFAULT_DATA);
  const char_gpt::Corpus data(path);
  char_gpt::Config cfg;
  cfg.vocab = data.vocab();
  cfg.layers = fl.i("layers", gpu ? 6 : 4);
  cfg.heads = fl.i("heads", gpu ? 6 : 4);
  cfg.embd = fl.i("embd", gpu ? 384 : 128);
  cfg.block = fl.i("block", gpu ? 256 : 64);
  cfg.dropout = fl.f("dropout", gpu ? 0.1 : 0.0);
  KILN_CHECK(cfg.embd % cfg.heads == 0, "[char_gpt] --embd ", cfg.embd,
             " must be a multiple of --heads ", cfg.heads);
  const int64_t B = fl.i("batch", gpu ? 64 : 16), T = cfg.block;
  const int64_t steps = fl.i("steps", gpu ? 2000 : 600);
  const int64_t eval_every = fl.i("eval-every", 100), eval_batches = fl.i("eval-batches", 8);
  const double peak_lr = fl.f("lr", gpu ? 1e-3 : 2e-3), max_minutes = fl.f("max-minutes", 4.5);
  const std::string ckpt = fl.get("checkpoint", "char_gpt_ckpt");
  const int64_t sample_chars = fl.i("sample-chars", 240);

  char_gpt::GPT model(cfg);
  model->to(dev);
  int64_t params = 0;
  for (auto& p : model->parameters()) params += p.numel();
  std::printf(
      "char_gpt: %s, %lld characters, vocabulary %lld; %lld layers x %lld heads x %lld "
      "wide, context %lld, batch %lld; %.2fM parameters; device %s\n",
      path.c_str(), static_cast<long long>(data.size()), static_cast<long long>(cfg.vocab),
      static_cast<long long>(cfg.layers), static_cast<long long>(cfg.heads),
      static_cast<long long>(cfg.embd), static_cast<long long>(T), static_cast<long long>(B),
      params / 1e6, dev.str().c_str());

  // AdamW with weight decay on matrices only, as nanoGPT does.
  std::vector<kiln::Tensor> decay, no_decay;
  for (auto& p : model->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  kiln::optim::AdamW opt(
      std::vector<kiln::optim::ParamGroup>{
          kiln::optim::ParamGroup(decay, kiln::optim::AdamWOptions(peak_lr).weight_decay(0.1)),
          kiln::optim::ParamGroup(no_decay, kiln::optim::AdamWOptions(peak_lr).weight_decay(0.0))},
      kiln::optim::AdamWOptions(peak_lr).betas({0.9, 0.99}));

  int64_t start = 0;
  if (fl.has("resume")) {
    kiln::load(*model, ckpt + ".model.safetensors");
    kiln::load(opt, ckpt + ".optim.safetensors");
    start = std::stoll(kiln::load_metadata(ckpt + ".model.safetensors").at("step"));
    std::printf("resumed from %s at step %lld\n", ckpt.c_str(), static_cast<long long>(start));
  }

  const double first_val = evaluate(model, data, false, eval_batches, B, T, rng, dev);
  std::printf("step %lld: val loss %.4f (ln(vocab) = %.4f)\n", static_cast<long long>(start),
              first_val, std::log(static_cast<double>(cfg.vocab)));
  std::printf("--- sample before training ---\n%s\n-------------------------------\n",
              sample(model, data, sample_chars, dev).c_str());

  const bool tty = isatty(fileno(stdout));
  const int64_t warmup = std::max<int64_t>(1, steps / 20);
  auto lr_at = [&](int64_t s) {  // linear warmup, then cosine decay to a tenth of the peak
    if (s < warmup) return peak_lr * static_cast<double>(s + 1) / static_cast<double>(warmup);
    const double t =
        static_cast<double>(s - warmup) / static_cast<double>(std::max<int64_t>(1, steps - warmup));
    return peak_lr * (0.1 + 0.45 * (1.0 + std::cos(M_PI * std::min(1.0, t))));
  };
  const auto t0 = Clock::now();
  double loss_ema = first_val, val = first_val;
  int64_t step = start;
  for (; step < steps; ++step) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    if (elapsed > max_minutes * 60) {
      std::printf("\nstopping at step %lld: --max-minutes %.1f reached\n",
                  static_cast<long long>(step), max_minutes);
      break;
    }
    for (auto& g : opt.param_groups()) g.set_lr(lr_at(step));
    auto [x, y] = data.batch(true, B, T, rng, dev);
    kiln::Tensor loss =
        kiln::nn::functional::cross_entropy(model(x).reshape({B * T, -1}), y.reshape({B * T}));
    opt.zero_grad();
    loss.backward();
    kiln::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    const double l = loss.item<double>();
    loss_ema = step == start ? l : 0.9 * loss_ema + 0.1 * l;

    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    const double done = static_cast<double>(step + 1 - start);
    const double tok_s = done * static_cast<double>(B * T) / secs;
    const double eta = secs / done * static_cast<double>(steps - step - 1);
    const int width = 24, filled = static_cast<int>(width * (step + 1) / steps);
    if (tty || (step + 1) % 20 == 0 || step + 1 == steps) {
      std::printf("%sstep %5lld/%lld [%s%s] loss %.3f | %.0f tok/s | ETA %s%s", tty ? "\r" : "",
                  static_cast<long long>(step + 1), static_cast<long long>(steps),
                  std::string(static_cast<size_t>(filled), '=').c_str(),
                  std::string(static_cast<size_t>(width - filled), ' ').c_str(), loss_ema, tok_s,
                  fmt_time(eta).c_str(), tty ? "" : "\n");
      std::fflush(stdout);
    }
    if ((step + 1) % eval_every == 0 && step + 1 < steps) {
      val = evaluate(model, data, false, eval_batches, B, T, rng, dev);
      std::printf("%sstep %lld: val loss %.4f\n", tty ? "\n" : "", static_cast<long long>(step + 1),
                  val);
    }
  }
  val = evaluate(model, data, false, 4 * eval_batches, B, T, rng, dev);
  const double train_secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("\ntrained %lld steps in %s; val loss %.4f\n", static_cast<long long>(step - start),
              fmt_time(train_secs).c_str(), val);
  std::printf("--- sample after training ---\n%s\n------------------------------\n",
              sample(model, data, sample_chars, dev).c_str());

  // The step goes in the model file's metadata.
  kiln::save(model->state_dict(), ckpt + ".model.safetensors", {{"step", std::to_string(step)}});
  kiln::save(opt, ckpt + ".optim.safetensors");
  std::printf("checkpoint: %s.{model,optim}.safetensors (resume with --resume)\n", ckpt.c_str());
  std::printf("final val_loss=%.4f\n", val);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "char_gpt: %s\n", e.what());
  return 1;
}

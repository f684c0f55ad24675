// From PyTorch: the C++ spellings of the "From PyTorch" documentation page, each after the Python it
// translates, compiled and run by the tests (its output is compared with tests/expected/).
#include <xgrad/xgrad.hpp>
#include <xgrad/xtensor.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
namespace optim = xgrad::optim;

// class Net(nn.Module):
//     def __init__(self):
//         super().__init__()
//         self.fc1 = nn.Linear(4, 8)
//         self.fc2 = nn.Linear(8, 3)
//     def forward(self, x):
//         return self.fc2(F.relu(self.fc1(x)))
struct Net : nn::Module {
    nn::Linear fc1{4, 8}, fc2{8, 3};
    Net() {
        register_module("fc1", fc1);
        register_module("fc2", fc2);
    }
    Tensor forward(const Tensor& x) override { return fc2(F::relu(fc1(x))); }
};

// The rows of the reductions, maths and shape tables added with PyTorch's newer ops.
void reductions_maths_and_shapes() {
    // ---- reductions ----
    Tensor y = xgrad::tensor({{3.0, 1.0, 2.0}, {0.0, 5.0, 4.0}});
    auto [values, indices] = y.max(1);                                        // values, indices = y.max(1)
    Tensor mins = y.min(1).indices;                                           // y.min(1).indices
    Tensor amax = y.amax({0, 1}), amin = y.amin(-1);                          // torch.amax(y, (0, 1)), y.amin(-1)
    Tensor best = y.argmax(1), worst = y.argmin(), kept = y.argmax(1, true);  // y.argmax(1), y.argmin() ...
    auto [sorted, order] = y.sort(-1, true);                                  // torch.sort(y, descending=True)
    Tensor ranks = y.argsort(-1);                                             // y.argsort(-1)
    auto [top, top_at] = y.topk(2);                                           // values, indices = y.topk(2)
    Tensor pr = y.prod(1), cs = y.cumsum(0), cp = y.cumprod(0);               // y.prod(1), y.cumsum(0), y.cumprod(0)
    Tensor lse = y.logsumexp(-1);                                             // torch.logsumexp(y, -1)
    Tensor v0 = y.var(1, xgrad::Correction(0)), s0 = y.std(1, xgrad::Correction(0));  // correction=0
    Tensor ein = xgrad::einsum("ij,jk->ik", {y, y.t()}),
           tr = xgrad::einsum("ii", {xgrad::tensor({{1.0, 2.0}, {3.0, 4.0}})});  // torch.einsum
    for (const Tensor& t : {values, indices, mins, amax, amin, best, worst, kept, sorted, order, ranks, top, top_at})
        std::cout << t << "\n";
    for (const Tensor& t : {pr, cs, cp, lse, v0, s0, ein, tr}) std::cout << t << "\n";

    // ---- elementwise maths and activations ----
    Tensor half = y / 2 - 1, twos = xgrad::full({3}, 2.0);
    std::cout << y.sin() << "\n" << xgrad::erf(half) << "\n" << y.log1p() << "\n" << half.expm1() << "\n";
    std::cout << half.floor() << "\n"
              << half.ceil() << "\n"
              << half.round() << "\n"
              << half.trunc() << "\n"
              << half.sign() << "\n";
    std::cout << y.remainder(3.0) << "\n" << (-y).fmod(3.0) << "\n" << (-y).div(twos, "floor") << "\n";
    std::cout << xgrad::lerp(y, xgrad::zeros({2, 3}), 0.5) << "\n"
              << xgrad::atan2(y, xgrad::ones({2, 3})) << "\n"
              << xgrad::pow(2.0, y) << "\n"
              << y.clamp_min(twos) << "\n";
    std::cout << F::silu(half) << "\n"
              << F::leaky_relu(half, 0.2) << "\n"
              << F::elu(half) << "\n"
              << F::softplus(half, 2.0) << "\n";
    for (const Tensor& t :
         {F::selu(half), F::celu(half), F::mish(half), F::relu6(y), F::hardswish(half), F::hardsigmoid(half),
          F::logsigmoid(half), F::softsign(half), F::hardtanh(y, -2.0, 2.0), F::quick_gelu(half)})
        std::cout << t << "\n";
    nn::SiLU silu;
    nn::LeakyReLU leaky(0.2);
    nn::Softmax softmax(-1);
    nn::LogSoftmax log_softmax(1);
    std::cout << silu(half) << "\n" << leaky(half) << "\n" << softmax(y) << "\n" << log_softmax(y) << "\n";

    // ---- more indexing and shape ops ----
    std::cout << y.repeat_interleave(2, 0) << "\n"
              << y.unflatten(1, {3, 1}).shape() << "\n"
              << y.index_add(0, xgrad::tensor({1.0}, xgrad::kInt64), xgrad::ones({1, 3})) << "\n";
}

// The rows of the dtypes: bool, uint8 and int32 tensors, with PyTorch's promotion.
void dtypes() {
    Tensor m = xgrad::tensor({1.0, 0.0, 1.0}, xgrad::kBool);       // torch.tensor([True, False, True])
    Tensor b = xgrad::tensor({0.0, 128.0, 255.0}, xgrad::kUInt8);  // torch.tensor([0, 128, 255], dtype=torch.uint8)
    Tensor i = xgrad::tensor({1.0, -2.0}, xgrad::kInt32);          // torch.tensor([1, -2], dtype=torch.int32)
    std::cout << m << "\n" << b << "\n" << i << "\n";
    std::cout << b + 1 << "\n"                                        // b + 1 (wraps around, as uint8 does)
              << i * 2.5 << "\n"                                      // i * 2.5 (float32)
              << m.sum() << "\n"                                      // m.sum() (int64)
              << xgrad::result_type(xgrad::ones({2}, xgrad::kInt32),  // torch.result_type(...)
                                    xgrad::tensor(1.0, xgrad::kFloat64))
              << "\n"
              << xgrad::ones({2}).to(xgrad::kBool) << "\n";  // torch.ones(2).to(torch.bool)
}

// ---- comparisons and logical ops ----
void comparisons() {
    Tensor x = xgrad::tensor({-1.0, 0.0, 2.5, NAN, INFINITY});
    Tensor y = xgrad::tensor({-1.0, 1.0, 2.0, NAN, INFINITY});
    std::cout << (x == y) << "\n"                            // x == y
              << (x != y) << "\n"                            // x != y
              << (x < 1.0) << "\n"                           // x < 1
              << (0.0 <= x) << "\n"                          // 0 <= x
              << x.gt(y) << " " << xgrad::ge(x, y) << "\n";  // x.gt(y), torch.ge(x, y)
    Tensor in_range = (x >= 0.0) & (x < 10.0);               // (x >= 0) & (x < 10)
    std::cout << in_range << "\n"
              << (~in_range | x.isnan()) << "\n"                               // ~in_range | x.isnan()
              << xgrad::logical_xor(x, y) << "\n"                              // torch.logical_xor(x, y)
              << x.isnan() << " " << x.isinf() << " " << x.isfinite() << "\n"  // x.isnan() ...
              << in_range.any() << " " << in_range.all() << " " << (x > 0.0).any(0) << "\n"
              << xgrad::tensor({3.0, 1.0}, xgrad::kUInt8).all() << "\n"  // uint8 in, uint8 out (1.13)
              << xgrad::equal(x, x) << " " << xgrad::equal(y.slice(0, 0, 3), y.slice(0, 0, 3)) << "\n"
              << xgrad::isclose(x, y, 0.1, 0.0, true) << "\n"             // torch.isclose(x, y, 0.1, 0, True)
              << xgrad::allclose(x, x + 1e-7, 1e-5, 1e-8, true) << "\n";  // torch.allclose(...)
}

int main() {
    // ---- tensors ----
    xgrad::manual_seed(0);                               // torch.manual_seed(0)
    Tensor a = xgrad::tensor({{1.0, 2.0}, {3.0, 4.0}});  // torch.tensor([[1., 2.], [3., 4.]])
    Tensor z = xgrad::zeros({2, 3});                     // torch.zeros(2, 3)
    Tensor h = xgrad::full({2, 2}, 0.5);                 // torch.full((2, 2), 0.5)
    Tensor r = xgrad::randn({2, 3}, xgrad::kFloat64);    // torch.randn(2, 3, dtype=torch.float64)
    Tensor x = xgrad::arange(12.0).reshape({3, 4});      // torch.arange(12.0).reshape(3, 4)
    std::cout << x.shape() << " " << x.size(0) << " " << x.dim() << " " << x.numel() << "\n";  // x.shape ...
    std::cout << r.dtype() << " " << r.device() << "\n";                                       // r.dtype, r.device
    std::cout << x << "\n";                                                                    // print(x)
    float first = x[0][1].item<float>();                                                       // x[0, 1].item()
    std::vector<float> values = a.to_vector<float>();                                          // a.flatten().tolist()
    std::cout << first << " " << values.size() << "\n";
    Tensor p = xgrad::matmul(a, a), q = a.matmul(a);                 // a @ a, a.matmul(a)
    Tensor cols = x.slice(1, 1, 3);                                  // x[:, 1:3]
    Tensor even = x.slice(1, {}, {}, 2);                             // x[:, ::2]
    Tensor v = x.view({-1, 6}), tt = x.t();                          // x.view(-1, 6), x.T
    Tensor pm = x.permute({1, 0}).unsqueeze(0);                      // x.permute(1, 0).unsqueeze(0)
    Tensor s = x.sum(-1, /*keepdim=*/true);                          // x.sum(dim=-1, keepdim=True)
    Tensor m = x.mean({0, 1});                                       // x.mean((0, 1))
    Tensor var = x.var(-1, /*unbiased=*/false, true);                // x.var(-1, unbiased=False, keepdim=True)
    Tensor c = xgrad::cat({a, a}, 0), st = xgrad::stack({a, a}, 0);  // torch.cat / torch.stack
    Tensor d = a.to(xgrad::kFloat64);                                // a.double(), a.to(torch.float64)
    Tensor e = a.clone().add_(1.0);                                  // a.clone().add_(1)
    for (const Tensor& t : {cols, even, v, tt, pm, s, m, var, c, st}) std::cout << t.shape() << " ";
    std::cout << "\n";
    std::cout << (p.to_vector<float>() == q.to_vector<float>()) << " " << d.dtype() << " " << e.sum().item<float>()
              << " " << z.sum().item<float>() << " " << h.mean().item<float>() << "\n";
    if (xgrad::cuda::is_available()) {  // torch.cuda.is_available()
        Tensor g = a.cuda();            // a.cuda(), a.to("cuda")
        g = g.cpu();                    // g.cpu()
    }

    // ---- indexing and shape ops ----
    Tensor idx = xgrad::tensor({2.0, 0.0}, xgrad::kInt64);         // idx = torch.tensor([2, 0])
    Tensor rows = x.index({idx}), sel = x.index_select(1, idx);    // x[idx], x.index_select(1, idx)
    Tensor gath = x.gather(1, idx.view({1, 2}));                   // x.gather(1, idx.view(1, 2))
    Tensor pairs = x.index({idx, idx.flip({0})});                  // x[idx, idx.flip(0)]
    x.index_put_({idx, idx.flip({0})}, pairs * 2.0);               // x[idx, idx.flip(0)] = pairs * 2
    Tensor onehot = F::one_hot(idx, 4);                            // F.one_hot(idx, 4)
    std::vector<Tensor> halves = x.chunk(2, 1);                    // x.chunk(2, 1)
    Tensor low = x.tril(), padded = F::pad(x, {1, 1}, "reflect");  // x.tril(), F.pad(x, (1, 1), mode="reflect")
    Tensor eye = xgrad::eye(3), lin = xgrad::linspace(0, 1, 5);    // torch.eye(3), torch.linspace(0, 1, 5)

    // ---- autograd ----
    Tensor w = xgrad::randn({3}).requires_grad_();  // torch.randn(3, requires_grad=True)
    Tensor loss = (w * w).sum();
    loss.backward();                                                                            // loss.backward()
    std::cout << (w.grad().to_vector<float>() == (w.detach() * 2).to_vector<float>()) << "\n";  // w.grad == 2 * w
    {
        xgrad::NoGradGuard no_grad;  // with torch.no_grad():
        w.sub_(w.grad() * 0.1);      //     w -= 0.1 * w.grad
    }
    auto check = xgrad::autograd::gradcheck(  // torch.autograd.gradcheck(torch.tanh, (x,))
        [](const std::vector<Tensor>& in) { return in[0].tanh(); },
        {xgrad::randn({4}, xgrad::kFloat64).requires_grad_()});
    std::cout << "gradcheck: " << check.ok << "\n";

    // ---- modules, losses, optimizers ----
    Net net;                                                             // net = Net()
    nn::Sequential seq(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 3));  // nn.Sequential(...)
    nn::LayerNorm ln({4});                                               // nn.LayerNorm(4)
    std::cout << seq << "\n";                                            // print(seq)
    for (auto& [name, param] : net.named_parameters())                   // for name, p in net.named_parameters():
        std::cout << name << " " << param.shape() << "\n";
    Tensor inputs = ln(xgrad::randn({16, 4})).detach();              // .detach(): data, not part of the graph
    Tensor labels = xgrad::randint(0, 3, {16});                      // torch.randint(0, 3, (16,))
    optim::SGD opt(net.parameters(), {.lr = 0.1, .momentum = 0.9});  // optim.SGD(..., lr=0.1, momentum=0.9)
    optim::StepLR sched(opt, /*step_size=*/10, /*gamma=*/0.5);       // lr_scheduler.StepLR(opt, 10, gamma=0.5)
    net.train();                                                     // net.train()
    for (int epoch = 0; epoch < 20; ++epoch) {
        opt.zero_grad();                                   // opt.zero_grad()
        Tensor l = F::cross_entropy(net(inputs), labels);  // F.cross_entropy(net(x), y)
        l.backward();
        opt.step();    // opt.step()
        sched.step();  // sched.step()
        if (epoch % 5 == 4) std::printf("epoch %d loss %.4f\n", epoch, l.item<float>());
    }
    net.eval();                                  // net.eval()
    Tensor probs = F::softmax(net(inputs), -1);  // F.softmax(net(x), dim=-1)
    std::cout << probs.sum(-1).slice(0, 0, 3) << "\n";

    // ---- saving, NumPy, xtensor ----
    auto dir = std::filesystem::temp_directory_path() / ("xgrad_from_pytorch_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    xgrad::save(net, (dir / "net.safetensors").string());  // torch.save(net.state_dict(), ...), as safetensors
    Net other;
    xgrad::load(other, (dir / "net.safetensors").string());   // other.load_state_dict(torch.load(...))
    xgrad::save_npy(x, (dir / "x.npy").string());             // numpy.save("x.npy", x.numpy())
    Tensor back = xgrad::load_npy((dir / "x.npy").string());  // torch.from_numpy(numpy.load("x.npy"))
    auto view = xgrad::as_xtensor<float>(back);               // back.numpy(): shares memory
    view(0, 0) = 100.0f;
    std::cout << (other(inputs).to_vector<float>() == net(inputs).to_vector<float>()) << " " << back[0][0].item<float>()
              << "\n";
    std::filesystem::remove_all(dir);

    xgrad::set_num_threads(1);                  // torch.set_num_threads(1)
    xgrad::set_printoptions({.precision = 2});  // torch.set_printoptions(precision=2)
    std::cout << r << "\n";

    // Last, as it draws from the generator (normal(0, 1), as PyTorch's init).
    nn::Embedding emb(10, 4, /*padding_idx=*/0);  // emb = nn.Embedding(10, 4, padding_idx=0)
    Tensor vecs = emb(idx);                       // emb(idx)

    reductions_maths_and_shapes();
    dtypes();

    // ---- more modules and losses (each drawing its initial values after the ones above) ----
    Tensor prob = xgrad::tensor({0.2, 0.7, 0.9}), target = xgrad::tensor({0.0, 1.0, 1.0});
    Tensor b1 = xgrad::tensor({0.5, -1.0, 3.0});
    std::cout << F::binary_cross_entropy(prob, target) << "\n"
              << F::smooth_l1_loss(b1, target, {.beta = 0.5}) << "\n"
              << F::huber_loss(b1, target, {.delta = 2.0}) << "\n"
              << F::kl_div(prob.log().unsqueeze(0), F::softmax(target.unsqueeze(0), -1), {.reduction = "batchmean"})
              << "\n"
              << F::normalize(xgrad::tensor({{3.0, 1.0, 2.0}, {0.0, 5.0, 4.0}}), 2.0, -1) << "\n";
    nn::Conv2d conv(3, 8, 3, 1, 1);  // nn.Conv2d(3, 8, 3, padding=1)
    nn::Conv1d conv1(4, 8, 5, 2);    // nn.Conv1d(4, 8, 5, stride=2)
    nn::Sequential features(nn::Conv2d(3, 8, 3, 1, 1), nn::BatchNorm2d(8), nn::ReLU(), nn::MaxPool2d(2),
                            nn::GroupNorm(2, 8), nn::Dropout2d(0.1), nn::AvgPool2d(2), nn::AdaptiveAvgPool2d({1, 1}),
                            nn::Flatten());
    std::cout << conv << "\n" << conv1 << "\n" << features << "\n";
    Tensor images = xgrad::randn({2, 3, 8, 8});
    std::cout << features(images).shape() << " " << conv1(xgrad::randn({2, 4, 11})).shape() << " "
              << F::conv2d(images, conv.weight, conv.bias, 1, 1).shape() << " " << nn::BatchNorm1d(8) << "\n";
    nn::ModuleList layers;  // nn.ModuleList([nn.Linear(4, 4)])
    layers.push_back(nn::Linear(4, 4));
    nn::ModuleDict heads;  // nn.ModuleDict({"head": nn.Linear(4, 2)})
    heads.insert("head", nn::Linear(4, 2));
    std::cout << layers << "\n"
              << heads << "\n"
              << layers[0](xgrad::ones({1, 4})).shape() << " " << heads["head"](xgrad::ones({1, 4})).shape() << "\n";
    Tensor qkv = xgrad::randn({2, 5, 16});
    Tensor att = F::scaled_dot_product_attention(qkv, qkv, qkv, Tensor(), 0.0, true);  // is_causal=True
    nn::MultiheadAttention attn(16, 4, {.batch_first = true});                         // nn.MultiheadAttention(...)
    auto [attended, weights] = attn.forward(qkv, qkv, qkv);                            // y, w = attn(qkv, qkv, qkv)
    std::cout << att.shape() << " " << attended.shape() << " " << weights.shape() << "\n";
    // nn.Conv2d(3, 8, 4, padding="same", padding_mode="circular"), nn.MaxPool2d(3, 2, 1, return_indices=True,
    // ceil_mode=True), nn.MultiheadAttention(16, 4, add_bias_kv=True, kdim=8, vdim=8, batch_first=True)
    nn::Conv2d ring(3, 8, 4, 1, "same", 1, 1, true, "circular");
    nn::MaxPool2d pool(3, 2, 1, 1, true, true);
    auto [pooled, where] = pool.forward_with_indices(ring(images));  // pooled, where = pool(ring(images))
    nn::MultiheadAttention cross(16, 4, {.add_bias_kv = true, .kdim = 8, .vdim = 8, .batch_first = true});
    Tensor keys = xgrad::randn({2, 3, 8});
    std::cout << ring << "\n"
              << pool << "\n"
              << pooled.shape() << " " << where.shape() << " " << cross.forward(qkv, keys, keys).second.shape() << "\n"
              << F::normalize(xgrad::tensor({{3.0, 1.0, 2.0}, {0.0, 5.0, 4.0}}), INFINITY, -1) << "\n";

    // ---- selection by a mask ----
    Tensor mask =
        xgrad::tensor({{1.0, 0.0}, {0.0, 1.0}}, xgrad::kBool);  // torch.tensor([[True, False], [False, True]])
    Tensor grid = xgrad::arange(4.0).view({2, 2});              // torch.arange(4.0).view(2, 2)
    std::cout << xgrad::where(mask, grid, -1.0) << "\n"         // torch.where(mask, grid, -1.0)
              << grid.masked_fill(mask, 0.0) << "\n"            // grid.masked_fill(mask, 0.0)
              << mask.nonzero() << "\n"                         // mask.nonzero()
              << grid.index({mask}) << "\n";                    // grid[mask]

    // ---- distributed (a world of one without mpirun) ----
    namespace dist = xgrad::distributed;
    dist::init();  // dist.init_process_group("mpi")
    Tensor total = xgrad::ones({2});
    dist::all_reduce(total);               // dist.all_reduce(total)
    nn::DistributedDataParallel ddp(net);  // DistributedDataParallel(net)
    std::cout << dist::rank() << " " << dist::world_size() << " " << total << "\n";
    dist::finalize();
    comparisons();

    // ---- sampling ----
    xgrad::manual_seed(0);                                   // torch.manual_seed(0)
    Tensor odds = xgrad::tensor({0.1, 0.2, 0.7});            // odds = torch.tensor([0.1, 0.2, 0.7])
    std::cout << xgrad::multinomial(odds, 2) << "\n"         // torch.multinomial(odds, 2)
              << xgrad::multinomial(odds, 5, true) << "\n";  // torch.multinomial(odds, 5, replacement=True)
    Tensor waits = xgrad::empty({3});                        // waits = torch.empty(3)
    std::cout << xgrad::exponential_(waits, 2.0) << "\n";    // waits.exponential_(2.0)

    // ---- bitwise operators with a number ----
    Tensor bytes = xgrad::tensor({200.0, 31.0}, xgrad::kUInt8);  // bytes = torch.tensor([200, 31], dtype=torch.uint8)
    Tensor flags = xgrad::tensor({1.0, 0.0}, xgrad::kBool);      // flags = torch.tensor([True, False])
    std::cout << (bytes & 15) << " " << (flags ^ true) << "\n";  // bytes & 15, flags ^ True

    // ---- medians ----
    Tensor scores =
        xgrad::tensor({{3.0, 1.0, 2.0, 2.0}, {0.0, 5.0, 4.0, 1.0}});  // scores = torch.tensor([[3., 1., 2., 2.], ...])
    auto [med, med_at] = scores.median(1);                            // med, med_at = scores.median(1)
    std::cout << med << " " << med_at << " " << scores.kthvalue(2).indices << " " << scores.median() << "\n";
}

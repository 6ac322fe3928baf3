// Tensor model: metadata, views sharing storage, factories, promotion, errors.
#include <gtest/gtest.h>

#include "kiln/kiln.h"

namespace kiln {
namespace {

TEST(Tensor, FactoriesAndMetadata) {
  Tensor t = zeros({2, 3});
  EXPECT_EQ(t.dim(), 2);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.dtype(), kFloat32);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.strides(), IntArrayRef({3, 1}));
  EXPECT_EQ(full({2}, 7).dtype(), kInt64);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  EXPECT_EQ(full({2}, 2.5).dtype(), kFloat32);
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(arange(0.0, 1.0, 0.25).numel(), 4);
  EXPECT_EQ(tensor({1, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor({1.5, 2.0}).dtype(), kFloat32);
  EXPECT_EQ(tensor({{1, 2}, {3, 4}}).sizes(), IntArrayRef({2, 2}));
  EXPECT_THROW(tensor({{1, 2}, {3}}), Error);
  EXPECT_THROW(zeros({-1}), Error);
  Tensor e = eye(3, 4);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(e[i][j].item<float>(), i == j ? 1.f : 0.f);
  Tensor l = logspace(0, 3, 4, 10.0, kFloat64);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(l[i].item<double>(), std::pow(10.0, i));
  Tensor z = zeros_like(ones({2, 2}, kInt32));
  EXPECT_EQ(z.dtype(), kInt32);
}

TEST(Tensor, FromBlobUsesDeleterOnce) {
  static int deleted = 0;
  float* buf = new float[6]{0, 1, 2, 3, 4, 5};
  {
    Tensor t = from_blob(buf, {2, 3}, [](void* p) {
      ++deleted;
      delete[] static_cast<float*>(p);
    });
    Tensor v = t.t();
    EXPECT_EQ(v[2][1].item<float>(), 5.f);
    t = Tensor();
    EXPECT_EQ(deleted, 0);  // the view keeps the storage alive
  }
  EXPECT_EQ(deleted, 1);
  std::vector<int32_t> vec = {1, 2, 3, 4};
  Tensor f = from_vector(vec, {2, 2});
  EXPECT_EQ(f.dtype(), kInt32);
  EXPECT_EQ(f[1][0].item<int>(), 3);
  EXPECT_THROW(from_vector(vec, {3}), Error);
}

TEST(Tensor, ViewsShareStorageAndVersion) {
  Tensor a = arange(12, kFloat32).view({3, 4});
  Tensor b = a.t();
  EXPECT_FALSE(b.is_contiguous());
  EXPECT_EQ(b.data_ptr(), a.data_ptr());
  uint32_t v0 = a._version();
  b.select(0, 1).fill_(-1);  // column 1 of a
  EXPECT_GT(a._version(), v0);
  EXPECT_EQ(b._version(), a._version());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a[i][1].item<float>(), -1.f);
  Tensor c = a.contiguous();
  EXPECT_TRUE(c.is_same(a));
  Tensor d = b.contiguous();
  EXPECT_FALSE(d.is_same(b));
  EXPECT_TRUE(d.is_contiguous());
  EXPECT_EQ(d[1][2].item<float>(), -1.f);
}

TEST(Tensor, ReshapeCopiesOnlyWhenNeeded) {
  Tensor a = arange(24).view({2, 3, 4});
  EXPECT_EQ(a.reshape({6, 4}).data_ptr(), a.data_ptr());
  Tensor t = a.transpose(0, 2);  // 4,3,2
  Tensor r = t.reshape({-1});
  EXPECT_NE(r.data_ptr(), a.data_ptr());
  EXPECT_EQ(r[1].item<int64_t>(), 12);  // t[0][0][1] = a[1][0][0]
  EXPECT_EQ(a.flatten(1).sizes(), IntArrayRef({2, 12}));
  EXPECT_EQ(a.unflatten(2, {2, 2}).sizes(), IntArrayRef({2, 3, 2, 2}));
  EXPECT_EQ(a.movedim({0}, {2}).sizes(), IntArrayRef({3, 4, 2}));
  EXPECT_EQ(a.narrow(2, 1, 2).sizes(), IntArrayRef({2, 3, 2}));
  EXPECT_EQ(a.mT().sizes(), IntArrayRef({2, 4, 3}));
  EXPECT_THROW(a.narrow(2, 3, 2), Error);
  EXPECT_THROW(a.t(), Error);
  EXPECT_THROW(a.size(3), Error);
  EXPECT_EQ(a.size(-1), 4);
}

TEST(Tensor, ComplexRealImagViews) {
  Tensor z = tensor({complex<double>(1, 2), complex<double>(3, -4)});
  EXPECT_EQ(z.dtype(), kComplex64);
  Tensor re = z.real(), im = z.imag();
  EXPECT_EQ(re.dtype(), kFloat32);
  EXPECT_EQ(im[1].item<float>(), -4.f);
  im.fill_(0);
  EXPECT_EQ(z[0].item().to_complex(), complex<double>(1, 0));
  EXPECT_THROW(ones({2}).imag(), Error);
}

TEST(Tensor, CopyBroadcastsAndCasts) {
  Tensor dst = zeros({2, 3}, kInt32);
  dst.copy_(tensor({1.9, -2.9, 3.0}, kFloat64));
  EXPECT_EQ(dst[1][0].item<int>(), 1);
  EXPECT_EQ(dst[1][1].item<int>(), -2);  // truncation, as C++ and PyTorch
  Tensor h = tensor({65504.0, 1e-8}).to(kFloat16);
  EXPECT_EQ(h[0].item<float>(), 65504.f);
  EXPECT_THROW(zeros({2, 3}).copy_(zeros({3, 2})), Error);
  EXPECT_THROW(ones({2}).item(), Error);
}

TEST(Tensor, AccessorChecksDtypeAndRank) {
  Tensor a = arange(6, kFloat32).view({2, 3});
  auto acc = a.accessor<float, 2>();
  acc[1][2] = 42;
  EXPECT_EQ(a[1][2].item<float>(), 42.f);
  EXPECT_THROW((a.accessor<double, 2>()), Error);
  EXPECT_THROW((a.accessor<float, 1>()), Error);
  EXPECT_THROW(a.data_ptr<int64_t>(), Error);
}

// Expected results are PyTorch's documented promotion table (torch.promote_types).
TEST(TypePromotion, PromoteTypesMatchesPyTorchTable) {
  EXPECT_EQ(promote_types(kUInt8, kInt8), kInt16);
  EXPECT_EQ(promote_types(kUInt8, kInt64), kInt64);
  EXPECT_EQ(promote_types(kBool, kFloat16), kFloat16);
  EXPECT_EQ(promote_types(kBFloat16, kFloat16), kFloat32);
  EXPECT_EQ(promote_types(kInt64, kFloat16), kFloat16);
  EXPECT_EQ(promote_types(kInt32, kBFloat16), kBFloat16);
  EXPECT_EQ(promote_types(kComplex64, kFloat64), kComplex128);
  EXPECT_EQ(promote_types(kComplex64, kFloat16), kComplex64);
  EXPECT_EQ(promote_types(kInt8, kInt16), kInt16);
  EXPECT_EQ(promote_types(kFloat32, kFloat64), kFloat64);
  EXPECT_THROW(promote_types(kFloat8_e4m3fn, kFloat32), Error);
  EXPECT_EQ(promote_types(kFloat8_e5m2, kFloat8_e5m2), kFloat8_e5m2);
  // symmetric over every pair
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 12; ++j)
      EXPECT_EQ(promote_types(DType(i), DType(j)), promote_types(DType(j), DType(i)));
}

// Expected values follow torch.result_type's documented examples and rules.
TEST(TypePromotion, ResultTypeScalarsAndZeroDim) {
  Tensor i32 = ones({2}, kInt32), f16 = ones({2}, kFloat16), u8 = ones({2}, kUInt8);
  EXPECT_EQ(result_type(i32, Scalar(5)), kInt32);      // int scalar doesn't widen
  EXPECT_EQ(result_type(i32, Scalar(2.5)), kFloat32);  // float scalar raises category
  EXPECT_EQ(result_type(f16, Scalar(2.5)), kFloat16);  // ... but not width
  EXPECT_EQ(result_type(u8, Scalar(1000)), kUInt8);
  EXPECT_EQ(result_type(f16, ones({}, kFloat64)), kFloat16);  // 0-dim doesn't widen
  EXPECT_EQ(result_type(i32, ones({}, kFloat64)), kFloat64);  // 0-dim raises category
  EXPECT_EQ(result_type(ones({}, kInt32), ones({}, kInt64)), kInt64);
  EXPECT_EQ(result_type(f16, Scalar(complex<double>(1, 1))), kComplex64);
  EXPECT_EQ(result_type(ones({2}, kFloat64), Scalar(complex<double>(1, 1))), kComplex128);
  EXPECT_EQ(result_type(ones({2}, kBool), Scalar(true)), kBool);
  EXPECT_EQ(result_type(ones({2}, kBool), Scalar(3)), kInt64);
  EXPECT_EQ((i32 + 2.5).dtype(), kFloat32);
  EXPECT_EQ((f16 * 3).dtype(), kFloat16);
  EXPECT_TRUE(can_cast(kInt32, kFloat16));
  EXPECT_FALSE(can_cast(kFloat32, kInt64));
  EXPECT_FALSE(can_cast(kComplex64, kFloat64));
  EXPECT_FALSE(can_cast(kInt32, kBool));
}

TEST(Device, ParsesAndRejects) {
  EXPECT_EQ(Device("cuda:1").index, 1);
  EXPECT_TRUE(Device("cpu").is_cpu());
  EXPECT_EQ(Device("cuda:3").str(), "cuda:3");
  EXPECT_THROW(Device("gpu"), Error);
  EXPECT_THROW(Device("cuda:x"), Error);
}

TEST(Device, CudaTensorsFailClearlyWithoutGpu) {
  try {
    zeros({2}, Device(kCUDA, 0));
    SUCCEED();  // a GPU build on a GPU machine
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln

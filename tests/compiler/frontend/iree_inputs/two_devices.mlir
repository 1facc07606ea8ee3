// Two devices, as IREE's multi-device data-tiling write-up has them: a matmul on each, the first
// one's result and the operands sent to the second, the sum sent back. Static shapes; the two
// sockets of an AVX-512 x86-64 server (tilescope's x86_avx512_2p). iree-compile's input in
// test_iree_import.py and tests/compiler/sim/test_placed_devices.py.
util.global private @device_a = #hal.device.target<"local", {ordinal = 0 : index}, [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "znver4", cpu_features = "+avx512f", iree.encoding.resolver = #iree_cpu.cpu_encoding_resolver<>, native_vector_size = 64 : i64, target_triple = "x86_64-unknown-unknown-eabi-elf"}>]> : !hal.device
util.global private @device_b = #hal.device.target<"local", {ordinal = 1 : index}, [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "znver4", cpu_features = "+avx512f", iree.encoding.resolver = #iree_cpu.cpu_encoding_resolver<>, native_vector_size = 64 : i64, target_triple = "x86_64-unknown-unknown-eabi-elf"}>]> : !hal.device
func.func @two(%lhs: tensor<256x512xf32> {iree.abi.affinity = #hal.device.affinity<@device_a>}, %rhs: tensor<512x256xf32> {iree.abi.affinity = #hal.device.affinity<@device_a>}) -> (tensor<256x256xf32> {iree.abi.affinity = #hal.device.affinity<@device_a>}) {
  %cst = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<256x256xf32>
  %fill = linalg.fill ins(%cst : f32) outs(%init : tensor<256x256xf32>) -> tensor<256x256xf32>
  %op = linalg.matmul ins(%lhs, %rhs : tensor<256x512xf32>, tensor<512x256xf32>) outs(%fill : tensor<256x256xf32>) -> tensor<256x256xf32>
  %transient_op = flow.tensor.transfer %op : tensor<256x256xf32> to #hal.device.affinity<@device_b>
  %lhsb = flow.tensor.transfer %lhs : tensor<256x512xf32> to #hal.device.affinity<@device_b>
  %rhsb = flow.tensor.transfer %rhs : tensor<512x256xf32> to #hal.device.affinity<@device_b>
  %initb = tensor.empty() : tensor<256x256xf32>
  %fillb = linalg.fill ins(%cst : f32) outs(%initb : tensor<256x256xf32>) -> tensor<256x256xf32>
  %opb = linalg.matmul ins(%lhsb, %rhsb : tensor<256x512xf32>, tensor<512x256xf32>) outs(%fillb : tensor<256x256xf32>) -> tensor<256x256xf32>
  %add = arith.addf %transient_op, %opb : tensor<256x256xf32>
  %result_a = flow.tensor.transfer %add : tensor<256x256xf32> to #hal.device.affinity<@device_a>
  return %result_a : tensor<256x256xf32>
}

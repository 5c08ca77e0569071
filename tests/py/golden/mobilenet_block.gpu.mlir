module @mobilenet_block {
  func.func public @main(%x: tensor<1x16x16x8xf32> loc("x")) -> (tensor<1x16x16x16xf32> {jax.result_info = "out"}) {
    %dw_w = stablehlo.constant dense<"0x3B4B963F444F313F1290DB3E11331E3DE8ACAB3E403DDFBCE1C986BF6EA14F3F318495BE2288823E3F886BBEE97BC3BE43AEE83E8DB70DBF090AD8BDC94AC53E6FBFB33E9C824DBEE0EA92BF25C3373FFF6A9F3ED7AF3DBFAA04123F72ED05BFABC4BF3E9358953DBCE91D3F8D9449BF1653BB3EE533503E2317DCBE2D70843C583F0BBF786B3E3E9AE0053CFE24023F624B8ABEE7BAAE3D1D4DBE3E7B7AE73E3CD129BE4D017ABF6A20A9BE0120F33EEB9511BE1EE3943E9CA7A5BEC36D13BFF73F7F3E862CDEBE5DF6E9BE3ADBB43E8099343FAB029E3E282C78BE80A39C3DEA1740BE41A740BF6CBCBDBE7EFC1DBF354B91BDF241303EDC7E573F7A9D1CBE013D3C3F2054323EEDD4DEBDDC353ABFA260693E840204BFB2498CBF061BE63E"> : tensor<3x3x1x8xf32> loc("dw_w")
    %dw_b = stablehlo.constant dense<[0.10000000149011612, -0.10000000149011612, 0.05000000074505806, 0.0, 0.20000000298023224, -0.05000000074505806, 0.10000000149011612, 0.0]> : tensor<8xf32> loc("dw_b")
    %pw_w = stablehlo.constant dense<"0xDB1378BE83096C3F633F05BEFE1190BE024ACE3D1D86C6BE157F1C3D0E0A7EBFA7448E3F8A4B1C3E96B920BC48E5183F444A12BFA9A2F3BE4C032CBCDEA00DBD4C56ACBD39999A3C86A636BF7B04193EFF05AB3E2E0EDCBB674CAFBF77B7853EF170BFBDD8AE21BE6737D9BE568C22BED38F7A3F50E309BF10FADEBE839E33BFF88C1FBD0FE7FB3DB716DBBEE502193F2867CC3E5449E93E37E5ABBEA6FCD2BDBEE9BA3E233DB03E080C19BE65A103BD0C3ED0BEFA7FD03E85CD163EC6199A3C5610D53E7EBDFABE03B9C33E40A73A3FE910283D6759C63DACD6F1BE79C441BF0FF4A3BDB96C16BFC78632BD8D7264BE43EFAFBEFCF6FABD9E0F8C3F76948C3E843F0F3FB583BB3E4A87CBBE7EA892BE97090DBF1EECF73DF9ABC9BE7CFCFE3E568161BEAD9CDE3E5010E43E384B4BBE3DE7263F5BA0B93D5EBF743EFFEADA3EADCA3F3F0B54E9BDE9DDE6BCFAFD8E3E234268BE93008ABE5910AD3E21F0ADBE0138103F3CA710BF21F4A83E8978DE3DAA5A943F042D21BF4FDC82BEDAC2B7BD9069483F5E89AFBE5E0410BD18E84EBD5749B93C3310463FA1EFBDBE2EFA203F81A85F3FFF76063FA55F27BFCD806F3E85DE40BE122EA33F6987EBBD6F64053FD983E7BE80BC103E136EC7BE62F2A6BEE7A19D3E1F0811BFC8B041BF4448163F0003043F9AC33A3D17C608BC8B3C603F2B08EE3D5A80483F1F778EBE5D30343F"> : tensor<1x1x8x16xf32> loc("pw_w")
    %pw_b = stablehlo.constant dense<0.05000000074505806> : tensor<16xf32> loc("pw_b")
    %depthwise = stablehlo.convolution(%x, %dw_w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 8 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x16x16x8xf32>, tensor<3x3x1x8xf32>) -> tensor<1x16x16x8xf32> loc("depthwise")
    %dw_bias_bias = stablehlo.broadcast_in_dim %dw_b, dims = [3] : (tensor<8xf32>) -> tensor<1x16x16x8xf32> loc("dw_bias")
    %dw_bias = stablehlo.add %depthwise, %dw_bias_bias : tensor<1x16x16x8xf32> loc("dw_bias")
    %dw_relu_zero = stablehlo.constant dense<0.0> : tensor<f32> loc("dw_relu")
    %dw_relu_zeros = stablehlo.broadcast_in_dim %dw_relu_zero, dims = [] : (tensor<f32>) -> tensor<1x16x16x8xf32> loc("dw_relu")
    %dw_relu = stablehlo.maximum %dw_bias, %dw_relu_zeros : tensor<1x16x16x8xf32> loc("dw_relu")
    %pointwise = stablehlo.convolution(%dw_relu, %pw_w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x16x16x8xf32>, tensor<1x1x8x16xf32>) -> tensor<1x16x16x16xf32> loc("pointwise")
    %pw_bias_bias = stablehlo.broadcast_in_dim %pw_b, dims = [3] : (tensor<16xf32>) -> tensor<1x16x16x16xf32> loc("pw_bias")
    %pw_bias = stablehlo.add %pointwise, %pw_bias_bias : tensor<1x16x16x16xf32> loc("pw_bias")
    %out_zero = stablehlo.constant dense<0.0> : tensor<f32> loc("out")
    %out_zeros = stablehlo.broadcast_in_dim %out_zero, dims = [] : (tensor<f32>) -> tensor<1x16x16x16xf32> loc("out")
    %out = stablehlo.maximum %pw_bias, %out_zeros : tensor<1x16x16x16xf32> loc("out")
    return %out : tensor<1x16x16x16xf32>
  }
}

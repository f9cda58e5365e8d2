"""C bodies of the special functions (``ember.ops.elementwise.special``; ``codegen.Body``).

The algorithms are the Cephes library's, as scipy (the CPU backend) and PyTorch use them:
Chebyshev expansions for the modified Bessel functions I0/I1 on [0, 8] and in 32/x beyond,
rational approximations for ndtri and the Bessel functions J0/J1, Euler-Maclaurin summation
for the Hurwitz zeta function (and polygamma from it), Cephes' airy for the Airy function Ai
(series near 0, asymptotic forms beyond |x| = 2.09). erfcx is ``exp(x^2) erfc(x)`` up to
x = 10 (relative error below 1e-13 in double) and the continued fraction of erfc beyond.
Everything but sinc, entr and xlog1py is evaluated in the device's widest float ``W`` and
rounded once, as scipy evaluates float32 inputs in double.

All the helpers are one prelude, so bodies of one group compile into one program without
defining a helper twice.
"""
from __future__ import annotations

import math

from .codegen import Body, group
from .math_unary import digamma_prelude

# Chebyshev coefficients of exp(-x) I0(x) on [0, 8] (in x/2 - 2) and of exp(-x) sqrt(x) I0(x)
# on [8, inf) (in 32/x - 2); the same for I1 (divided by x on [0, 8]).
I0_A = [
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1]
I0_B = [
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1]
I1_A = [
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1]
I1_B = [
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1]

# ndtri: rational approximations for |y - 0.5| <= 3/8 (P0/Q0) and in z = sqrt(-2 log y)
# for z in [2, 8) (P1/Q1) and [8, 64) (P2/Q2)
NDTRI_P0 = [-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
            1.39312609387279679503E1, -1.23916583867381258016E0]
NDTRI_Q0 = [1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
            -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
            1.59056225126211695515E1, -1.18331621121330003142E0]
NDTRI_P1 = [4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
            4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
            -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4]
NDTRI_Q1 = [1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
            1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
            -3.80806407691578277194E-2, -9.33259480895457427372E-4]
NDTRI_P2 = [3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
            1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
            3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9]
NDTRI_Q2 = [1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
            2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
            2.89247864745380683936E-6, 6.79019408009981274425E-9]

# J0 and J1: rational approximations on [0, 5] (RP/RQ) and the asymptotic form's P and Q
# (in 25/x^2) beyond; RQ and QQ have a leading coefficient 1 that is not stored (Cephes' p1evl)
J0_PP = [7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
         5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
         9.99999999999999997821e-01]
J0_PQ = [9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
         5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
         1.00000000000000000218e+00]
J0_QP = [-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
         -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
         -5.14105326766599330220e+01, -6.05014350600728481186e+00]
J0_QQ = [6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
         7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
         2.42005740240291393179e+02]
J0_RP = [-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
         9.70862251047306323952e+15]
J0_RQ = [4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
         1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
         3.18121955943204943306e+16, 1.71086294081043136091e+18]
J1_PP = [7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
         5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
         1.00000000000000000254e+00]
J1_PQ = [5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
         5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
         9.99999999999999997461e-01]
J1_QP = [5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
         3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
         2.11688757100572135698e+02, 2.52070205858023719784e+01]
J1_QQ = [7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
         9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
         3.36093607810698293419e+02]
J1_RP = [-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
         3.68295732863852883286e+15]
J1_RQ = [6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
         2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
         8.95222336184627338078e+16, 5.32278620332680085395e+18]

# Y0 and Y1 on [0, 5]: x^2-rational parts (YQ's leading 1 not stored); beyond 5 they share
# J0's and J1's asymptotic P and Q with sin and cos exchanged
Y0_YP = [1.55924367855235737965E4, -1.46639295903971606143E7, 5.43526477051876500413E9,
         -9.82136065717911466409E11, 8.75906394395366999549E13, -3.46628303384729719441E15,
         4.42733268572569800351E16, -1.84950800436986690637E16]
Y0_YQ = [1.04128353664259848412E3, 6.26107330137134956842E5, 2.68919633393814121987E8,
         8.64002487103935000337E10, 2.02979612750105546709E13, 3.17157752842975028269E15,
         2.50596256172653059228E17]
Y1_YP = [1.26320474790178026440E9, -6.47355876379160291031E11, 1.14509511541823727583E14,
         -8.12770255501325109621E15, 2.02439475713594898196E17, -7.78877196265950026825E17]
Y1_YQ = [5.94301592346128195359E2, 2.35564092943068577943E5, 7.34811944459721705660E7,
         1.87601316108706159478E10, 3.88231277496238566008E12, 6.20557727146953693363E14,
         6.87141087355300489866E16, 3.97270608116560655612E18]
# K0 and K1: Chebyshev coefficients of K0(x) + log(x/2) I0(x) and x(K1(x) - log(x/2) I1(x))
# on [0, 2] (in x^2 - 2), and of exp(x) sqrt(x) K0/K1 on [2, inf) (in 8/x - 2)
K0_A = [1.37446543561352307156E-16, 4.25981614279661018399E-14, 1.03496952576338420167E-11,
        1.90451637722020886025E-9, 2.53479107902614945675E-7, 2.28621210311945178607E-5,
        1.26461541144692592338E-3, 3.59799365153615016266E-2, 3.44289899924628486886E-1,
        -5.35327393233902768720E-1]
K0_B = [5.30043377268626276149E-18, -1.64758043015242134646E-17, 5.21039150503902756861E-17,
        -1.67823109680541210385E-16, 5.51205597852431940784E-16, -1.84859337734377901440E-15,
        6.34007647740507060557E-15, -2.22751332699166985548E-14, 8.03289077536357521100E-14,
        -2.98009692317273043925E-13, 1.14034058820847496303E-12, -4.51459788337394416547E-12,
        1.85594911495471785253E-11, -7.95748924447710747776E-11, 3.57739728140030116597E-10,
        -1.69753450938905987466E-9, 8.57403401741422608519E-9, -4.66048989768794782956E-8,
        2.76681363944501510342E-7, -1.83175552271911948767E-6, 1.39498137188764993662E-5,
        -1.28495495816278026384E-4, 1.56988388573005337491E-3, -3.14481013119645005427E-2,
        2.44030308206595545468E0]
K1_A = [-7.02386347938628759343E-18, -2.42744985051936593393E-15, -6.66690169419932900609E-13,
        -1.41148839263352776110E-10, -2.21338763073472585583E-8, -2.43340614156596823496E-6,
        -1.73028895751305206302E-4, -6.97572385963986435018E-3, -1.22611180822657148235E-1,
        -3.53155960776544875667E-1, 1.52530022733894777053E0]
K1_B = [-5.75674448366501715755E-18, 1.79405087314755922667E-17, -5.68946255844285935196E-17,
        1.83809354436663880070E-16, -6.05704724837331885336E-16, 2.03870316562433424052E-15,
        -7.01983709041831346144E-15, 2.47715442448130437068E-14, -8.97670518232499435011E-14,
        3.34841966607842919884E-13, -1.28917396095102890680E-12, 5.13963967348173025100E-12,
        -2.12996783842756842877E-11, 9.21831518760500529508E-11, -4.19035475934189648750E-10,
        2.01504975519703286596E-9, -1.03457624656780970260E-8, 5.74108412545004946722E-8,
        -3.50196060308781257119E-7, 2.40648494783721712015E-6, -1.93619797416608296024E-5,
        1.95215518471351631108E-4, -2.85781685962277938680E-3, 1.03923736576817238437E-1,
        2.72062619048444266945E0]

# Euler-Maclaurin: (2k)! / B_2k
ZETA_A = [12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
          7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
          -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18]


# Ai (Cephes' airy, as scipy's): for x >= 2.09 exp(-zeta) times a rational function of 1/zeta
# (AN/AD, zeta = 2 x^(3/2) / 3); for x < -2.09 the oscillating asymptotic form with rational f
# (AFN/AFD) and g (AGN/AGD) in 1/zeta^2, AFD and AGD with a leading 1 that is not stored
# (torch's airy_ai drops it: its Ai is off by up to 2e-5 relative just below -2.09); between,
# the Maclaurin series
AIRY_AN = [3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
           1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
           1.40264691163389668864e+01, 9.99999999999999995305e-01]
AIRY_AD = [5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
           1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
           1.40959135607834029598e+01, 1.00000000000000000470e+00]
AIRY_AFN = [-1.31696323418331795333e-01, -6.26456544431912369773e-01,
            -6.93158036036933542233e-01, -2.79779981545119124951e-01,
            -4.91900132609500318020e-02, -4.06265923594885404393e-03,
            -1.59276496239262096340e-04, -2.77649108155232920844e-06,
            -1.67787698489114633780e-08]
AIRY_AFD = [1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
            9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
            4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07]
AIRY_AGN = [1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
            9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
            5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
            8.11789239554389293311e-08, 3.41551784765923618484e-10]
AIRY_AGD = [9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
            5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
            4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
            4.91834570062930015649e-09]


def _lit(ctx, v):
    return repr(float(v)) + ("" if ctx.w == "double" else "f")


def _table(ctx, name, values):
    items = ", ".join(_lit(ctx, v) for v in values)
    return f"__constant W {name}[{len(values)}] = {{{items}}};"


def _prelude(ctx):  # noqa: C901 - the C library, one function after another
    L = lambda v: _lit(ctx, v)  # noqa: E731
    eps = 1.11022302462515654042E-16 if ctx.w == "double" else 5.9604644775390625E-8
    tables = "\n".join(_table(ctx, n, v) for n, v in (
        ("SP_I0A", I0_A), ("SP_I0B", I0_B), ("SP_I1A", I1_A), ("SP_I1B", I1_B),
        ("SP_NP0", NDTRI_P0), ("SP_NQ0", NDTRI_Q0), ("SP_NP1", NDTRI_P1),
        ("SP_NQ1", NDTRI_Q1), ("SP_NP2", NDTRI_P2), ("SP_NQ2", NDTRI_Q2),
        ("SP_J0PP", J0_PP), ("SP_J0PQ", J0_PQ), ("SP_J0QP", J0_QP), ("SP_J0QQ", J0_QQ),
        ("SP_J0RP", J0_RP), ("SP_J0RQ", J0_RQ), ("SP_J1PP", J1_PP), ("SP_J1PQ", J1_PQ),
        ("SP_J1QP", J1_QP), ("SP_J1QQ", J1_QQ), ("SP_J1RP", J1_RP), ("SP_J1RQ", J1_RQ),
        ("SP_Y0P", Y0_YP), ("SP_Y0Q", Y0_YQ), ("SP_Y1P", Y1_YP), ("SP_Y1Q", Y1_YQ),
        ("SP_K0A", K0_A), ("SP_K0B", K0_B), ("SP_K1A", K1_A), ("SP_K1B", K1_B),
        ("SP_ZA", ZETA_A), ("SP_AIAN", AIRY_AN), ("SP_AIAD", AIRY_AD),
        ("SP_AIAFN", AIRY_AFN), ("SP_AIAFD", AIRY_AFD), ("SP_AIAGN", AIRY_AGN),
        ("SP_AIAGD", AIRY_AGD)))
    return tables + digamma_prelude(ctx) + f"""
W sp_chbevl(W x, __constant W* a, int n) {{
  W b0 = a[0], b1 = 0, b2 = 0;
  for (int i = 1; i < n; i++) {{ b2 = b1; b1 = b0; b0 = x * b1 - b2 + a[i]; }}
  return {L(0.5)} * (b0 - b2);
}}
W sp_polevl(W x, __constant W* a, int n) {{
  W r = 0;
  for (int i = 0; i < n; i++) r = r * x + a[i];
  return r;
}}
W sp_p1evl(W x, __constant W* a, int n) {{  /* a leading coefficient 1, not stored */
  W r = x + a[0];
  for (int i = 1; i < n; i++) r = r * x + a[i];
  return r;
}}
W sp_i0e(W x) {{
  x = fabs(x);
  if (x <= 8) return sp_chbevl(x / 2 - 2, SP_I0A, 30);
  return sp_chbevl(32 / x - 2, SP_I0B, 25) / sqrt(x);
}}
W sp_i0(W x) {{ return exp(fabs(x)) * sp_i0e(x); }}
W sp_i1e(W x) {{
  W z = fabs(x), r;
  if (z <= 8) r = sp_chbevl(z / 2 - 2, SP_I1A, 29) * z;
  else r = sp_chbevl(32 / z - 2, SP_I1B, 25) / sqrt(z);
  return x < 0 ? -r : r;
}}
W sp_i1(W x) {{ return exp(fabs(x)) * sp_i1e(x); }}
W sp_ndtri(W y0) {{
  if (y0 == 0) return -INFINITY;
  if (y0 == 1) return INFINITY;
  if (!(y0 > 0 && y0 < 1)) return NAN;
  const W e2 = {L(0.13533528323661269189)};
  int negate = 1;
  W y = y0;
  if (y > 1 - e2) {{ y = 1 - y; negate = 0; }}
  if (y > e2) {{
    y = y - {L(0.5)};
    const W y2 = y * y;
    const W x = y + y * (y2 * sp_polevl(y2, SP_NP0, 5) / sp_polevl(y2, SP_NQ0, 9));
    return x * {L(math.sqrt(2 * math.pi))};
  }}
  const W x = sqrt(-2 * log(y));
  const W x0 = x - log(x) / x, z = 1 / x;
  const W x1 = x < 8 ? z * sp_polevl(z, SP_NP1, 9) / sp_polevl(z, SP_NQ1, 9)
                     : z * sp_polevl(z, SP_NP2, 9) / sp_polevl(z, SP_NQ2, 9);
  return negate ? x1 - x0 : x0 - x1;
}}
W sp_ndtr(W x) {{ return {L(0.5)} * erfc(-x * {L(math.sqrt(0.5))}); }}
W sp_erfcx_pos(W x) {{  /* x >= 0; OpenCL C has no recursion */
  if (x <= 10) return exp(x * x) * erfc(x);
  /* erfc's continued fraction: 1/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))) */
  W f = x;
  for (int k = 40; k >= 1; k--) f = x + ({L(0.5)} * k) / f;
  return {L(1 / math.sqrt(math.pi))} / f;
}}
W sp_erfcx(W x) {{
  if (isnan(x)) return x;
  if (x >= 0) return sp_erfcx_pos(x);
  if (x < {L(-26.7)}) return INFINITY;
  return 2 * exp(x * x) - sp_erfcx_pos(-x);
}}
W sp_log_ndtr(W x) {{
  const W t = x * {L(math.sqrt(0.5))};
  if (x < -1) return log(sp_erfcx(-t) / 2) - t * t;
  return log1p(-erfc(t) / 2);
}}
W sp_j0(W x) {{
  x = fabs(x);
  const W xx = x * x;
  if (x <= 5) {{
    if (x < {L(1e-5)}) return 1 - xx / 4;
    return (xx - {L(5.78318596294678452118)}) * (xx - {L(30.4712623436620863991)})
        * sp_polevl(xx, SP_J0RP, 4) / sp_p1evl(xx, SP_J0RQ, 8);
  }}
  const W w = 25 / xx;
  const W p = sp_polevl(w, SP_J0PP, 7) / sp_polevl(w, SP_J0PQ, 7);
  const W q = sp_polevl(w, SP_J0QP, 8) / sp_p1evl(w, SP_J0QQ, 7);
  const W s = x - {L(math.pi / 4)};
  return (p * cos(s) - 5 / x * q * sin(s)) * {L(math.sqrt(2 / math.pi))} / sqrt(x);
}}
W sp_j1(W x) {{
  const W z = fabs(x), zz = z * z;
  W r;
  if (z <= 5) {{
    r = sp_polevl(zz, SP_J1RP, 4) / sp_p1evl(zz, SP_J1RQ, 8) * z
        * (zz - {L(14.6819706421238932572)}) * (zz - {L(49.2184563216946036703)});
  }} else {{
    const W w = 25 / zz;
    const W p = sp_polevl(w, SP_J1PP, 7) / sp_polevl(w, SP_J1PQ, 7);
    const W q = sp_polevl(w, SP_J1QP, 8) / sp_p1evl(w, SP_J1QQ, 7);
    const W s = z - {L(3 * math.pi / 4)};
    r = (p * cos(s) - 5 / z * q * sin(s)) * {L(math.sqrt(2 / math.pi))} / sqrt(z);
  }}
  return x < 0 ? -r : r;
}}
W sp_y0(W x) {{
  if (isnan(x)) return x;
  if (x < 0) return NAN;
  if (x == 0) return -INFINITY;
  if (x <= 5) {{
    const W z = x * x;
    return sp_polevl(z, SP_Y0P, 8) / sp_p1evl(z, SP_Y0Q, 7)
        + {L(2 / math.pi)} * log(x) * sp_j0(x);
  }}
  const W w = 5 / x, z = 25 / (x * x);
  const W p = sp_polevl(z, SP_J0PP, 7) / sp_polevl(z, SP_J0PQ, 7);
  const W q = sp_polevl(z, SP_J0QP, 8) / sp_p1evl(z, SP_J0QQ, 7);
  const W s = x - {L(math.pi / 4)};
  return (p * sin(s) + w * q * cos(s)) * {L(math.sqrt(2 / math.pi))} / sqrt(x);
}}
W sp_y1(W x) {{
  if (isnan(x)) return x;
  if (x < 0) return NAN;
  if (x == 0) return -INFINITY;
  if (x <= 5) {{
    const W z = x * x;
    return x * (sp_polevl(z, SP_Y1P, 6) / sp_p1evl(z, SP_Y1Q, 8))
        + {L(2 / math.pi)} * (sp_j1(x) * log(x) - 1 / x);
  }}
  const W w = 5 / x, z = w * w;
  const W p = sp_polevl(z, SP_J1PP, 7) / sp_polevl(z, SP_J1PQ, 7);
  const W q = sp_polevl(z, SP_J1QP, 8) / sp_p1evl(z, SP_J1QQ, 7);
  const W s = x - {L(3 * math.pi / 4)};
  return (p * sin(s) + w * q * cos(s)) * {L(math.sqrt(2 / math.pi))} / sqrt(x);
}}
/* exp(x) K0(x) and exp(x) K1(x): one evaluation serves K and its scaled form */
W sp_k0e(W x) {{
  if (isnan(x)) return x;
  if (x < 0) return NAN;
  if (x == 0) return INFINITY;
  if (x <= 2) return (sp_chbevl(x * x - 2, SP_K0A, 10) - log(x / 2) * sp_i0(x)) * exp(x);
  return sp_chbevl(8 / x - 2, SP_K0B, 25) / sqrt(x);
}}
W sp_k1e(W x) {{
  if (isnan(x)) return x;
  if (x < 0) return NAN;
  if (x == 0) return INFINITY;
  if (x <= 2) return (log(x / 2) * sp_i1(x) + sp_chbevl(x * x - 2, SP_K1A, 11) / x) * exp(x);
  return sp_chbevl(8 / x - 2, SP_K1B, 25) / sqrt(x);
}}
W sp_k0(W x) {{ return x > 2 ? exp(-x) * sp_k0e(x) : sp_k0e(x) * exp(-x); }}
W sp_k1(W x) {{ return exp(-x) * sp_k1e(x); }}
W sp_zeta(W x, W q) {{
  if (x == 1) return INFINITY;
  if (x < 1) return NAN;
  if (q <= 0) {{
    if (q == floor(q)) return INFINITY;
    if (x != floor(x)) return NAN;
  }}
  const W eps = {L(eps)};
  W s = pow(q, -x), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {{
    i++;
    a += 1;
    b = pow(a, -x);
    s += b;
    if (-eps * s < b && b < eps * s) return s;
  }}
  const W w = a;
  s += b * w / (x - 1);
  s -= {L(0.5)} * b;
  W fa = 1, k = 0;
  for (i = 0; i < 12; i++) {{
    fa *= x + k;
    b /= w;
    W t = fa * b / SP_ZA[i];
    s = s + t;
    if (fabs(t / s) < eps) return s;
    k += 1;
    fa *= x + k;
    b /= w;
    k += 1;
  }}
  return s;
}}
/* the regularized incomplete gamma functions (Cephes igam/igamc): the power series of P for
   x < max(1, a), the continued fraction of Q otherwise; the other one as the complement */
W sp_igam_series(W a, W x) {{
  const W ax = a * log(x) - x - lgamma(a);
  if (ax < {L(-7.09782712893383996843e2)}) return 0;
  W r = a, c = 1, sum = 1;
  for (int i = 0; i < 2000; i++) {{
    r += 1; c *= x / r; sum += c;
    if (c <= {L(eps)} * sum) break;
  }}
  return sum * exp(ax) / a;
}}
W sp_igamc_cf(W a, W x) {{
  const W ax = a * log(x) - x - lgamma(a);
  if (ax < {L(-7.09782712893383996843e2)}) return 0;
  const W big = {L(4.503599627370496e15)}, biginv = {L(2.22044604925031308085e-16)};
  W y = 1 - a, z = x + y + 1, c = 0;
  W pkm2 = 1, qkm2 = x, pkm1 = x + 1, qkm1 = z * x;
  W ans = pkm1 / qkm1, t = 1;
  for (int i = 0; i < 2000 && t > {L(eps)}; i++) {{
    c += 1; y += 1; z += 2;
    const W yc = y * c;
    const W pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
    if (qk != 0) {{ const W q = pk / qk; t = fabs((ans - q) / q); ans = q; }} else t = 1;
    pkm2 = pkm1; pkm1 = pk; qkm2 = qkm1; qkm1 = qk;
    if (fabs(pk) > big) {{ pkm2 *= biginv; pkm1 *= biginv; qkm2 *= biginv; qkm1 *= biginv; }}
  }}
  return ans * exp(ax);
}}
W sp_gammainc(W a, W x) {{
  if (isnan(a) || isnan(x) || x < 0 || a < 0) return NAN;
  if (a == 0) return x > 0 ? 1 : NAN;
  if (x == 0) return 0;
  if (isinf(a)) return isinf(x) ? NAN : 0;
  if (isinf(x)) return 1;
  if (x > 1 && x > a) return 1 - sp_igamc_cf(a, x);
  return sp_igam_series(a, x);
}}
W sp_gammaincc(W a, W x) {{
  if (isnan(a) || isnan(x) || x < 0 || a < 0) return NAN;
  if (a == 0) return x > 0 ? 0 : NAN;
  if (x == 0) return 1;
  if (isinf(a)) return isinf(x) ? NAN : 1;
  if (isinf(x)) return 0;
  if (x < 1 || x < a) return 1 - sp_igam_series(a, x);
  return sp_igamc_cf(a, x);
}}
W sp_airy_ai(W x) {{
  if (isnan(x) || isinf(x)) return NAN;
  if (x > {L(103.892)}) return 0;
  const W sqpii = {L(1 / math.sqrt(math.pi))};
  if (x < {L(-2.09)}) {{
    const W zeta = -2 * x * sqrt(-x) / 3, z = 1 / zeta, zz = z * z;
    const W f = 1 + zz * sp_polevl(zz, SP_AIAFN, 9) / sp_p1evl(zz, SP_AIAFD, 9);
    const W g = z * sp_polevl(zz, SP_AIAGN, 11) / sp_p1evl(zz, SP_AIAGD, 10);
    const W t = zeta + {L(math.pi / 4)};
    return sqpii / sqrt(sqrt(-x)) * (sin(t) * f - cos(t) * g);
  }}
  if (x >= {L(2.09)}) {{
    const W zeta = 2 * x * sqrt(x) / 3, z = 1 / zeta;
    return sqpii * (sp_polevl(z, SP_AIAN, 8) / sp_polevl(z, SP_AIAD, 8))
           / (2 * sqrt(sqrt(x)) * exp(zeta));
  }}
  /* Ai = c1 f - c2 g with f, g the Maclaurin series in x^3 */
  W f = 1, g = x, k = 1, m = 1, n = x, t = 1;
  const W z = x * x * x;
  for (int i = 0; i < 100 && t > {L(eps)}; i++) {{
    m *= z; k += 1; m /= k;
    n *= z; k += 1; n /= k;
    m /= k; f += m;
    k += 1; n /= k; g += n;
    t = fabs(m / f);
  }}
  return {L(0.355028053887817239260)} * f - {L(0.258819403792806798405)} * g;
}}
W sp_polygamma(int n, W x) {{
  if (n == 0) return ew_digamma(x);
  const W sign = (n % 2) ? 1 : -1;
  return sign * exp(lgamma((W)n + 1)) * sp_zeta((W)n + 1, x);
}}
"""


def _wide(fn):
    return Body(fn, f"r = (CT)sp_{fn}((W)x0);", _prelude, kinds="f")


UNARY = {
    "i0": _wide("i0"), "special_i0e": _wide("i0e"), "special_i1": _wide("i1"),
    "special_i1e": _wide("i1e"), "special_ndtr": _wide("ndtr"), "special_ndtri": _wide("ndtri"),
    "special_log_ndtr": _wide("log_ndtr"), "special_erfcx": _wide("erfcx"),
    "special_bessel_j0": _wide("j0"), "special_bessel_j1": _wide("j1"),
    "special_bessel_y0": _wide("y0"), "special_bessel_y1": _wide("y1"),
    "special_modified_bessel_k0": _wide("k0"), "special_modified_bessel_k1": _wide("k1"),
    "special_scaled_modified_bessel_k0": _wide("k0e"),
    "special_scaled_modified_bessel_k1": _wide("k1e"),
    "special_airy_ai": _wide("airy_ai"),
    # numpy's sinc and scipy's entr compute in the input's own precision
    "sinc": Body("sinc", lambda c: f"const CT y = {c.lit(math.pi)} * (x0 == 0 ? {c.lit(1e-20)} : "
                                   f"x0); r = sin(y) / y;", kinds="f"),
    "special_entr": Body("entr", "r = isnan(x0) ? x0 : (x0 > 0 ? -x0 * log(x0) : "
                                 "(x0 == 0 ? (CT)0 : (CT)-INFINITY));", kinds="f"),
}
BINARY = {
    "special_xlog1py": Body("xlog1py", "r = (x0 == 0 && !isnan(x1)) ? (CT)0 : x0 * log1p(x1);",
                            kinds="f"),
    "special_zeta": Body("zeta", "r = (CT)sp_zeta((W)x0, (W)x1);", _prelude, kinds="f"),
    "special_gammainc": Body("gammainc", "r = (CT)sp_gammainc((W)x0, (W)x1);", _prelude,
                             kinds="f"),
    "special_gammaincc": Body("gammaincc", "r = (CT)sp_gammaincc((W)x0, (W)x1);", _prelude,
                              kinds="f"),
}
# p0 = n
POLYGAMMA = Body("polygamma", "r = (CT)sp_polygamma((int)p0, (W)x0);", _prelude, kinds="f")
group(*UNARY.values())
group(*BINARY.values())
